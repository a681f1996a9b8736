package oduflowtest

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/oduflow/oduflow-go/oduflow/claims"
	"github.com/oduflow/oduflow-go/receipt"
)

func isErr(err, target error) bool { return errors.Is(err, target) }

// incrementTotal commits rounds fenced increments of the claim's Total, retrying on ErrConflict. It
// returns how many of its increments were committed.
func incrementTotal(ctx context.Context, st Store, requestID string, rounds int) (int, error) {
	done := 0
	cur, err := st.Get(ctx, requestID)
	if err != nil {
		return 0, err
	}
	for done < rounds {
		next := clone(cur)
		next.Total++
		out, err := st.CompareAndSwap(ctx, next)
		switch {
		case err == nil:
			done++
			cur = out
		case errors.Is(err, claims.ErrConflict) && out != nil:
			cur = out
		default:
			return done, err
		}
	}
	return done, nil
}

// holdBoth takes the request lock and the client lease of c, the pair the dispatcher holds while it
// records the dispatch intent.
func holdBoth(t testing.TB, st Store, c *claims.Claim) (reqLock, clientLease claims.Lease) {
	t.Helper()
	reqLock, err := st.TryRequestLock(testContext(t), c.RequestID)
	if err != nil {
		t.Fatalf("TryRequestLock: %v", err)
	}
	clientLease, err = st.AcquireClientLease(testContext(t), c.MinionID, time.Second)
	if err != nil {
		t.Fatalf("AcquireClientLease: %v", err)
	}
	t.Cleanup(func() { _ = reqLock.Release(); _ = clientLease.Release() })
	return reqLock, clientLease
}

func intent(c *claims.Claim) *claims.Claim {
	next := clone(c)
	now := time.Now().UTC()
	next.Phase, next.DispatchedAt = claims.PhaseDispatching, &now
	return next
}

// fakeLease claims to be held but comes from no store.
type fakeLease struct{}

func (fakeLease) Release() error { return nil }
func (fakeLease) Held() bool     { return true }

func (s *suite) testCompareAndSwapHeld(t *testing.T) {
	t.Run("while held", func(t *testing.T) {
		st := s.open(t, s.backend(t))
		cur := mustCreate(t, st, NewClaim())
		rl, cl := holdBoth(t, st, cur)
		next := intent(cur)
		out, err := st.CompareAndSwapHeld(testContext(t), next, rl, cl)
		if err != nil {
			t.Fatalf("CompareAndSwapHeld with both leases held: %v", err)
		}
		next.Generation = 2
		if out.FenceToken == 0 {
			t.Fatal("the dispatch intent issued no fence token")
		}
		next.FenceToken = out.FenceToken // issued by the store (FenceTokens)
		sameClaim(t, "CompareAndSwapHeld result", out, next)
		sameClaim(t, "stored after CompareAndSwapHeld", mustGet(t, st, cur.RequestID), next)
	})
	t.Run("no leases named", func(t *testing.T) {
		st := s.open(t, s.backend(t))
		cur := mustCreate(t, st, NewClaim())
		if out, err := st.CompareAndSwapHeld(testContext(t), intent(cur)); err != nil || out.Generation != 2 {
			t.Fatalf("CompareAndSwapHeld without leases: %+v %v", out, err)
		}
	})
	for _, which := range []string{"request lock", "client lease"} {
		t.Run("after Release of the "+which, func(t *testing.T) {
			st := s.open(t, s.backend(t))
			cur := mustCreate(t, st, NewClaim())
			rl, cl := holdBoth(t, st, cur)
			gone := rl
			if which == "client lease" {
				gone = cl
			}
			if err := gone.Release(); err != nil {
				t.Fatal(err)
			}
			if gone.Held() {
				t.Fatal("Held() true after Release")
			}
			_, err := st.CompareAndSwapHeld(testContext(t), intent(cur), rl, cl)
			wantErr(t, "CompareAndSwapHeld after Release", err, claims.ErrLeaseLost)
			unchanged(t, st, cur)
		})
	}
	t.Run("lease taken over by another holder", func(t *testing.T) {
		loc := s.backend(t)
		a, b := s.open(t, loc), s.open(t, loc)
		cur := mustCreate(t, a, NewClaim())
		rl, cl := holdBoth(t, a, cur)
		if err := rl.Release(); err != nil {
			t.Fatal(err)
		}
		again, err := b.TryRequestLock(testContext(t), cur.RequestID)
		if err != nil {
			t.Fatalf("replica takes the released lock: %v", err)
		}
		defer func() { _ = again.Release() }()
		_, err = a.CompareAndSwapHeld(testContext(t), intent(cur), rl, cl)
		wantErr(t, "CompareAndSwapHeld naming a lock now held by another", err, claims.ErrLeaseLost)
		unchanged(t, a, cur)
	})
	t.Run("foreign lease", func(t *testing.T) {
		st := s.open(t, s.backend(t))
		elsewhere := s.open(t, s.backend(t)) // another backend's lease for the same names
		cur := mustCreate(t, st, NewClaim())
		frl, fcl := holdBoth(t, elsewhere, cur)
		for name, held := range map[string][]claims.Lease{
			"another backend's request lock": {frl}, "another backend's client lease": {fcl},
			"a lease of no store": {fakeLease{}},
		} {
			_, err := st.CompareAndSwapHeld(testContext(t), intent(cur), held...)
			wantErr(t, "CompareAndSwapHeld with "+name, err, claims.ErrLeaseLost)
			unchanged(t, st, cur)
		}
	})
	t.Run("stale generation while held", func(t *testing.T) {
		st := s.open(t, s.backend(t))
		cur := mustCreate(t, st, NewClaim())
		rl, cl := holdBoth(t, st, cur)
		won, err := st.CompareAndSwap(testContext(t), intent(cur))
		if err != nil {
			t.Fatal(err)
		}
		_, err = st.CompareAndSwapHeld(testContext(t), intent(cur), rl, cl)
		wantErr(t, "CompareAndSwapHeld with a stale generation", err, claims.ErrConflict)
		unchanged(t, st, won)
	})
	t.Run("after session death", func(t *testing.T) {
		if s.f.Capabilities.LeaseTTL <= 0 {
			t.Skip("leases do not expire: a living holder cannot lose them (no LeaseTTL)")
		}
		st := s.open(t, s.backend(t))
		cur := mustCreate(t, st, NewClaim())
		rl, cl := holdBoth(t, st, cur)
		s.f.KillSession(st)
		// Until the TTL runs out the leases may still count as held; once it has, the guarded write must
		// refuse and write nothing.
		var last *claims.Claim
		lost := eventually(s.releaseGrace(), func() bool {
			last = mustGet(t, st, cur.RequestID)
			_, err := st.CompareAndSwapHeld(testContext(t), intent(last), rl, cl)
			if err != nil && !errors.Is(err, claims.ErrLeaseLost) {
				t.Fatalf("CompareAndSwapHeld after session death: %v", err)
			}
			return err != nil
		})
		if !lost {
			t.Fatalf("CompareAndSwapHeld still succeeds %v after the holder's session died (TTL %v)",
				s.releaseGrace(), s.f.Capabilities.LeaseTTL)
		}
		unchanged(t, st, last)
	})
}

func (s *suite) testLeases(t *testing.T) {
	t.Run("request lock exclusive", func(t *testing.T) {
		loc := s.backend(t)
		a, b := s.open(t, loc), s.open(t, loc)
		req := receipt.NewRequestID()
		for i, h := range []Store{a, b} {
			if held, err := h.RequestLockHeld(testContext(t), req); err != nil || held {
				t.Fatalf("handle %d: RequestLockHeld before any lock = %v, %v", i, held, err)
			}
		}
		l, err := a.TryRequestLock(testContext(t), req)
		if err != nil {
			t.Fatal(err)
		}
		if !l.Held() {
			t.Fatal("Held() false on a fresh lock")
		}
		for i, h := range []Store{a, b} {
			_, err := h.TryRequestLock(testContext(t), req)
			wantErr(t, "TryRequestLock of a held lock", err, claims.ErrLeaseBusy)
			if held, err := h.RequestLockHeld(testContext(t), req); err != nil || !held {
				t.Fatalf("handle %d: RequestLockHeld while held = %v, %v", i, held, err)
			}
		}
		other, err := b.TryRequestLock(testContext(t), receipt.NewRequestID())
		if err != nil {
			t.Fatalf("another request's lock is independent: %v", err)
		}
		_ = other.Release()
		if err := l.Release(); err != nil {
			t.Fatal(err)
		}
		if err := l.Release(); err != nil {
			t.Fatalf("second Release: %v (Release is idempotent)", err)
		}
		if l.Held() {
			t.Fatal("Held() true after Release")
		}
		for i, h := range []Store{a, b} {
			if held, err := h.RequestLockHeld(testContext(t), req); err != nil || held {
				t.Fatalf("handle %d: RequestLockHeld after Release = %v, %v", i, held, err)
			}
		}
		l2, err := b.TryRequestLock(testContext(t), req)
		if err != nil {
			t.Fatalf("TryRequestLock after Release: %v", err)
		}
		_ = l2.Release()
	})
	t.Run("request lock race", func(t *testing.T) {
		loc := s.backend(t)
		handles := []Store{s.open(t, loc), s.open(t, loc)}
		req := receipt.NewRequestID()
		var wins, held atomic.Int64
		var won sync.Map
		defer won.Range(func(l, _ any) bool { _ = l.(claims.Lease).Release(); return true })
		var wg sync.WaitGroup
		start := make(chan struct{})
		for _, h := range handles {
			for range raceGoroutines {
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					l, err := h.TryRequestLock(testContext(t), req) // winners keep it until the end
					switch {
					case err == nil:
						won.Store(l, true)
						wins.Add(1)
					case errors.Is(err, claims.ErrLeaseBusy):
						held.Add(1)
					default:
						t.Errorf("TryRequestLock: %v", err)
					}
				}()
			}
		}
		close(start)
		wg.Wait()
		if n := int64(len(handles) * raceGoroutines); wins.Load() != 1 || held.Load() != n-1 {
			t.Fatalf("%d concurrent TryRequestLock: %d won, %d ErrLeaseBusy", n, wins.Load(), held.Load())
		}
	})
	t.Run("client lease busy", func(t *testing.T) {
		loc := s.backend(t)
		a, b := s.open(t, loc), s.open(t, loc)
		minion := "client-" + receipt.NewRequestID()
		l, err := a.AcquireClientLease(testContext(t), minion, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = l.Release() }()
		const wait = 300 * time.Millisecond
		start := time.Now()
		_, err = b.AcquireClientLease(testContext(t), minion, wait)
		wantErr(t, "AcquireClientLease of a held lease", err, claims.ErrLeaseBusy)
		if el := time.Since(start); el < wait*3/4 {
			t.Fatalf("gave up after %v, before maxWait %v", el, wait)
		}
		_, err = a.AcquireClientLease(testContext(t), minion, 0)
		wantErr(t, "AcquireClientLease by the same handle", err, claims.ErrLeaseBusy)
		ctx, cancel := context.WithCancel(testContext(t))
		cancel()
		if got, err := b.AcquireClientLease(ctx, minion, time.Minute); err == nil {
			_ = got.Release()
			t.Fatal("AcquireClientLease with a cancelled context succeeded")
		}
		ol, err := b.AcquireClientLease(testContext(t), "client-"+receipt.NewRequestID(), 0)
		if err != nil {
			t.Fatalf("another client's lease is independent: %v", err)
		}
		_ = ol.Release()
	})
	t.Run("client lease handoff", func(t *testing.T) {
		loc := s.backend(t)
		a, b := s.open(t, loc), s.open(t, loc)
		minion := "client-" + receipt.NewRequestID()
		l, err := a.AcquireClientLease(testContext(t), minion, 0)
		if err != nil {
			t.Fatal(err)
		}
		got := make(chan error, 1)
		go func() {
			w, err := b.AcquireClientLease(testContext(t), minion, 30*time.Second)
			if err == nil {
				err = w.Release()
			}
			got <- err
		}()
		time.Sleep(100 * time.Millisecond)
		if err := l.Release(); err != nil {
			t.Fatal(err)
		}
		if err := <-got; err != nil {
			t.Fatalf("waiter after Release: %v", err)
		}
	})
	t.Run("client lease mutual exclusion", func(t *testing.T) {
		loc := s.backend(t)
		handles := []Store{s.open(t, loc), s.open(t, loc)}
		minion := "client-" + receipt.NewRequestID()
		var inside, maxInside, total atomic.Int64
		var wg sync.WaitGroup
		for _, h := range handles {
			for range casGoroutines {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for range 3 {
						l, err := h.AcquireClientLease(testContext(t), minion, time.Minute)
						if err != nil {
							t.Error(err)
							return
						}
						n := inside.Add(1)
						for m := maxInside.Load(); n > m && !maxInside.CompareAndSwap(m, n); m = maxInside.Load() {
						}
						time.Sleep(2 * time.Millisecond)
						inside.Add(-1)
						total.Add(1)
						if err := l.Release(); err != nil {
							t.Error(err)
						}
					}
				}()
			}
		}
		wg.Wait()
		if maxInside.Load() != 1 || total.Load() != int64(len(handles)*casGoroutines*3) {
			t.Fatalf("%d holders at once (want 1), %d acquisitions", maxInside.Load(), total.Load())
		}
	})
	t.Run("release on holder death process", s.testHolderDeathProcess)
	t.Run("release on session death", func(t *testing.T) {
		if s.f.Capabilities.LeaseTTL <= 0 {
			t.Skip("leases do not expire (no LeaseTTL); process death is the holder-death test")
		}
		loc := s.backend(t)
		a, b := s.open(t, loc), s.open(t, loc)
		c := NewClaim()
		holdBoth(t, a, c)
		s.f.KillSession(a)
		s.waitFree(t, b, c)
	})
}

// waitFree fails unless st can take both leases of c within the release grace period.
func (s *suite) waitFree(t testing.TB, st Store, c *claims.Claim) {
	t.Helper()
	var rl claims.Lease
	if !eventually(s.releaseGrace(), func() bool {
		var err error
		rl, err = st.TryRequestLock(testContext(t), c.RequestID)
		if err != nil && !errors.Is(err, claims.ErrLeaseBusy) {
			t.Fatalf("TryRequestLock: %v", err)
		}
		return err == nil
	}) {
		t.Fatalf("request lock of a dead holder still held after %v", s.releaseGrace())
	}
	defer func() { _ = rl.Release() }()
	cl, err := st.AcquireClientLease(testContext(t), c.MinionID, s.releaseGrace())
	if err != nil {
		t.Fatalf("client lease of a dead holder: %v", err)
	}
	_ = cl.Release()
}
