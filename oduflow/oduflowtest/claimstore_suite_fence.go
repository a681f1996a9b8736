package oduflowtest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/oduflow/oduflow-go/oduflow/claims"
)

// roleFence: record dispatch intents of fresh claims of one client, each under the client lease,
// checking that every token is above the last one recorded (in a file shared by all processes).
const roleFence = "fence"

// fenceIntents is how many intents each goroutine of the FenceTokens clause records.
const fenceIntents = 4

// testFenceTokens is the clause of the fencing tokens: the transition to the dispatch intent
// (CompareAndSwapHeld from claimed to dispatching) issues a token strictly greater than every token
// issued before for the same client, recorded in the claim and kept unchanged by every later write; a
// client's tokens strictly increase across concurrent workers and processes, and each is above the
// floor the caller passed (the minion's high-water mark).
func (s *suite) testFenceTokens(t *testing.T) {
	t.Run("recorded and kept", func(t *testing.T) {
		st := s.open(t, s.backend(t))
		c := mustCreate(t, st, NewClaim())
		if c.FenceToken != 0 {
			t.Fatalf("a created claim has fence token %d", c.FenceToken)
		}
		rl, cl := holdBoth(t, st, c)
		out, err := st.CompareAndSwapHeld(testContext(t), intent(c), rl, cl)
		if err != nil {
			t.Fatal(err)
		}
		if out.FenceToken < 1 || out.FenceToken > claims.MaxFenceToken {
			t.Fatalf("intent issued fence token %d", out.FenceToken)
		}
		if got := mustGet(t, st, c.RequestID); got.FenceToken != out.FenceToken {
			t.Fatalf("stored fence token %d, issued %d", got.FenceToken, out.FenceToken)
		}
		// Later writes keep it, whatever they carry; a guarded rewrite of the intent issues none.
		again, err := st.CompareAndSwapHeld(testContext(t), out, rl, cl)
		if err != nil || again.FenceToken != out.FenceToken {
			t.Fatalf("guarded rewrite of the intent: token %d (issued %d), %v", tokenOf(again), out.FenceToken, err)
		}
		next := clone(again)
		next.FenceToken = 0
		next.Phase = claims.PhaseDispatched
		done, err := st.CompareAndSwap(testContext(t), next)
		if err != nil || done.FenceToken != out.FenceToken || mustGet(t, st, c.RequestID).FenceToken != out.FenceToken {
			t.Fatalf("later write: token %d (issued %d), %v", tokenOf(done), out.FenceToken, err)
		}
		// The next intent of the client gets a greater token.
		c2 := NewClaim()
		c2.MinionID = c.MinionID
		c2 = mustCreate(t, st, c2)
		_ = rl.Release()
		rl2, err := st.TryRequestLock(testContext(t), c2.RequestID)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = rl2.Release() }()
		out2, err := st.CompareAndSwapHeld(testContext(t), intent(c2), rl2, cl)
		if err != nil || out2.FenceToken <= out.FenceToken {
			t.Fatalf("second intent of the client: token %d after %d, %v", tokenOf(out2), out.FenceToken, err)
		}
	})
	t.Run("above the caller's floor", func(t *testing.T) {
		st := s.open(t, s.backend(t))
		minion := NewClaim().MinionID
		intentWith := func(floor uint64) (*claims.Claim, error) {
			c := NewClaim()
			c.MinionID = minion
			c = mustCreate(t, st, c)
			rl, cl := holdBoth(t, st, c)
			defer func() { _ = cl.Release(); _ = rl.Release() }()
			next := intent(c)
			next.FenceToken = floor
			out, err := st.CompareAndSwapHeld(testContext(t), next, rl, cl)
			if err == nil && mustGet(t, st, c.RequestID).FenceToken != out.FenceToken {
				t.Fatalf("stored fence token %d, issued %d", mustGet(t, st, c.RequestID).FenceToken, out.FenceToken)
			}
			if err != nil {
				if got := mustGet(t, st, c.RequestID); got.Phase != claims.PhaseClaimed || got.FenceToken != 0 {
					t.Fatalf("a refused intent wrote phase %s, token %d", got.Phase, got.FenceToken)
				}
			}
			return out, err
		}
		first, err := intentWith(0)
		if err != nil {
			t.Fatal(err)
		}
		// A minion fenced by another store (or before a restore) far above this store's counter.
		floor := first.FenceToken + 1_000_000
		raised, err := intentWith(floor)
		if err != nil || raised.FenceToken <= floor {
			t.Fatalf("intent with floor %d: token %d, %v", floor, tokenOf(raised), err)
		}
		// Tokens keep increasing after the floor, with no floor or a lower one.
		prev := raised.FenceToken
		for _, f := range []uint64{0, 1, floor} {
			out, err := intentWith(f)
			if err != nil || out.FenceToken <= prev {
				t.Fatalf("intent with floor %d after token %d: token %d, %v", f, prev, tokenOf(out), err)
			}
			prev = out.FenceToken
		}
		// A floor no token can be above: refused as a store failure, nothing written.
		if out, err := intentWith(claims.MaxFenceToken); !errors.Is(err, claims.ErrClaimStore) {
			t.Fatalf("intent with floor MaxFenceToken: token %d, %v; want ErrClaimStore", tokenOf(out), err)
		}
	})
	t.Run("concurrent workers", func(t *testing.T) {
		loc := s.backend(t)
		minion := NewClaim().MinionID
		shared := filepath.Join(t.TempDir(), "last")
		var wg sync.WaitGroup
		errs := make(chan error, 8)
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := recordIntents(testContext(t), s.open(t, loc), minion, shared, fenceIntents); err != nil {
					errs <- err
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
	})
	t.Run("processes", func(t *testing.T) {
		s.needProcesses(t)
		loc := s.backend(t)
		minion := NewClaim().MinionID
		dir := t.TempDir()
		barrier, shared := filepath.Join(dir, "go"), filepath.Join(dir, "last")
		data, err := NewClaim().MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		kids := make([]*child, childProcs)
		for i := range kids {
			kids[i] = s.spawn(t, childJob{Role: roleFence, Location: loc, Claim: data, Barrier: barrier,
				Goroutines: 2, Rounds: fenceIntents, Minion: minion, Shared: shared})
		}
		for _, k := range kids {
			k.expect(t, lineReady)
		}
		if err := os.WriteFile(barrier, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		total := 0
		for _, k := range kids {
			ok, _ := k.result(t)
			total += ok
		}
		if total != childProcs*2*fenceIntents {
			t.Fatalf("intents recorded: %d, want %d", total, childProcs*2*fenceIntents)
		}
	})
}

func tokenOf(c *claims.Claim) uint64 {
	if c == nil {
		return 0
	}
	return c.FenceToken
}

// recordIntents creates n claims of minion on st and records the dispatch intent of each under the
// client lease, checking against shared (the last token recorded, by any goroutine or process) that
// every token is above every token recorded before it.
func recordIntents(ctx context.Context, st Store, minion, shared string, n int) error {
	for range n {
		c := NewClaim()
		c.MinionID = minion
		if err := st.Create(ctx, clone(c)); err != nil {
			return fmt.Errorf("create: %w", err)
		}
		cur, err := st.Get(ctx, c.RequestID)
		if err != nil {
			return err
		}
		rl, err := st.TryRequestLock(ctx, c.RequestID)
		if err != nil {
			return fmt.Errorf("request lock: %w", err)
		}
		cl, err := st.AcquireClientLease(ctx, minion, time.Minute)
		if err != nil {
			_ = rl.Release()
			return fmt.Errorf("client lease: %w", err)
		}
		err = func() error {
			defer func() { _ = cl.Release(); _ = rl.Release() }()
			out, err := st.CompareAndSwapHeld(ctx, intent(cur), rl, cl)
			if err != nil {
				return fmt.Errorf("intent: %w", err)
			}
			last := uint64(0)
			if data, err := os.ReadFile(shared); err == nil {
				last, _ = strconv.ParseUint(strings.TrimSpace(string(data)), 10, 64)
			}
			if out.FenceToken <= last {
				return fmt.Errorf("fence token %d issued after %d", out.FenceToken, last)
			}
			return os.WriteFile(shared, []byte(strconv.FormatUint(out.FenceToken, 10)), 0o600)
		}()
		if err != nil {
			return err
		}
	}
	return nil
}
