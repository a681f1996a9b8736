package etcdtest

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/oduflow/oduflow-go/internal/testwait"
	"github.com/oduflow/oduflow-go/oduflow"
	"github.com/oduflow/oduflow-go/oduflow/claims"
	"github.com/oduflow/oduflow-go/oduflow/etcdstore"
	"github.com/oduflow/oduflow-go/receipt"
)

// realOutcomeUnknown is an error a Store really returned for a write whose acknowledgement it never got
// (its member's connection cut mid-request), so the injections below hand the worker exactly what a
// lost acknowledgement looks like.
func realOutcomeUnknown(t *testing.T) error {
	t.Helper()
	newStore(t) // make sure the shared member runs
	p := newProxy(t, sharedSingle.c.clients[0])
	st := openStores(t, []string{p.addr()}, "/lost-ack", 1, etcdstore.WithDialTimeout(2*time.Second))[0]
	p.setCut(true)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	err := st.Create(ctx, newClaim(newMinion()))
	if !errors.Is(err, etcdstore.ErrOutcomeUnknown) {
		t.Fatalf("Create through a cut connection: %v", err)
	}
	return err
}

// lostAckStore is a dispatcher's ClaimStore whose first dispatch-intent write is answered by a lost
// acknowledgement: before answering, act decides what really happened to the write.
type lostAckStore struct {
	*etcdstore.Store
	lost  error
	act   func(s *lostAckStore, next *claims.Claim, held []claims.Lease)
	fired atomic.Bool
	calls atomic.Int32 // intent writes (CompareAndSwapHeld to or of phase dispatching)
}

func (s *lostAckStore) CompareAndSwapHeld(ctx context.Context, next *claims.Claim, held ...claims.Lease) (*claims.Claim, error) {
	if next.Phase == claims.PhaseDispatching {
		s.calls.Add(1)
		if s.fired.CompareAndSwap(false, true) {
			s.act(s, next, held)
			return nil, s.lost
		}
	}
	return s.Store.CompareAndSwapHeld(ctx, next, held...)
}

// revoke ends the etcd lease of l from outside its session, the way an expiry does.
func (s *lostAckStore) revoke(t *testing.T, l claims.Lease) {
	if _, err := s.Client().Revoke(context.Background(), l.(*etcdstore.Lease).LeaseID()); err != nil {
		t.Errorf("revoke: %v", err)
	}
}

func runCount(pubs []string, req string) int {
	n := 0
	for _, r := range pubs {
		if r == req {
			n++
		}
	}
	return n
}

// TestIntentLostAck: the dispatch-intent write of a worker is answered by a lost acknowledgement
// (etcdstore.ErrOutcomeUnknown) in each of the ways that can happen. The worker publishes exactly when
// the intent is recorded and provably its own, and at most once:
//
//   - committed: the write landed; the worker re-reads, confirms its intent and publishes once.
//   - committed late: the write is still in flight and lands a moment after the answer (a proposal the
//     leader commits later); the worker's retry and the late write are fenced on the same record, so
//     exactly one commits, and the worker publishes once.
//   - not committed, lease lost: nothing landed and the client lease expired; no publication, the claim
//     stays claimed, and Status turns unknown after the launch grace.
//   - committed, lease lost: the intent landed but the request lock expired before the worker could
//     confirm it; it cannot prove the intent is its own, so it publishes nothing: the residual case,
//     reported unknown (the recorded intent quarantines the client).
func TestIntentLostAck(t *testing.T) {
	lost := realOutcomeUnknown(t)
	type want struct {
		runs      int
		intent    bool
		finalized bool
	}
	cases := []struct {
		name string
		act  func(t *testing.T, s *lostAckStore, next *claims.Claim, held []claims.Lease)
		want want
	}{
		{"committed", func(t *testing.T, s *lostAckStore, next *claims.Claim, held []claims.Lease) {
			if _, err := s.Store.CompareAndSwapHeld(context.Background(), next, held...); err != nil {
				t.Errorf("the write that 'lost' its acknowledgement: %v", err)
			}
		}, want{runs: 1, intent: true, finalized: true}},
		{"committed_late", func(t *testing.T, s *lostAckStore, next *claims.Claim, held []claims.Lease) {
			go func() {
				time.Sleep(60 * time.Millisecond) // the worker's first re-read comes after 50 ms
				_, _ = s.Store.CompareAndSwapHeld(context.Background(), next, held...)
			}()
		}, want{runs: 1, intent: true, finalized: true}},
		{"not_committed_lease_lost", func(t *testing.T, s *lostAckStore, _ *claims.Claim, held []claims.Lease) {
			s.revoke(t, held[1]) // the client lease
		}, want{runs: 0, intent: false}},
		{"committed_lock_lost", func(t *testing.T, s *lostAckStore, next *claims.Claim, held []claims.Lease) {
			if _, err := s.Store.CompareAndSwapHeld(context.Background(), next, held...); err != nil {
				t.Errorf("the write that 'lost' its acknowledgement: %v", err)
			}
			s.revoke(t, held[0]) // the request lock
		}, want{runs: 0, intent: true}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := newProtoMinion(newMinion())
			sim := startMaster(t, m)
			st := &lostAckStore{Store: newStore(t, etcdstore.WithTTL(crashTTL), windowsOf(crashTimers())), lost: lost}
			st.act = func(s *lostAckStore, next *claims.Claim, held []claims.Lease) { tc.act(t, s, next, held) }
			d, err := newSaltDispatcher(sim.Addr(), sim.EventsAddr(), sim.KeyFile(), sim.PKIDir(), st.Store,
				oduflow.WithClaimStore(st))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = d.Close(closedContext()) })
			req := receipt.NewRequestID()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if _, err := d.Start(ctx, m.id, req, receipt.ProfileConfigure); err != nil {
				t.Fatal(err)
			}
			if err := d.Wait(ctx); err != nil {
				t.Fatal(err)
			}
			if !st.fired.Load() {
				t.Fatal("the worker never wrote its intent")
			}
			var pubs []string
			for _, p := range sim.Publications() {
				if p.Fun == "oduflow_job.run" && len(p.Args) > 0 {
					r, _ := p.Args[0].(string)
					pubs = append(pubs, r)
				}
			}
			c, err := st.Get(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			if got := runCount(pubs, req); got != tc.want.runs || m.runCount() != tc.want.runs {
				t.Fatalf("published %d times, minion ran %d times; want %d (claim %s)", got, m.runCount(),
					tc.want.runs, c.Phase)
			}
			if c.WasDispatched() != tc.want.intent {
				t.Fatalf("claim records the intent: %v, want %v (phase %s)", c.WasDispatched(), tc.want.intent, c.Phase)
			}
			if tc.want.finalized {
				if c.Phase != claims.PhaseTerminal || c.Status != receipt.StatusSucceeded {
					t.Fatalf("claim %s %s, want terminal succeeded", c.Phase, c.Status)
				}
				return
			}
			// Not published: Status is honest, unknown once the launch grace is over (the request lock is
			// free), and stays so; the claim is never published later.
			testwait.Until(t, "Status not unknown after the launch grace", crashTimers().LaunchGrace+5*time.Second,
				func() bool {
					r, err := d.Status(ctx, m.id, req, receipt.ProfileConfigure)
					return err == nil && r.Status == receipt.StatusUnknown
				})
			if n := runCount(pubs, req); n != 0 || m.runCount() != 0 {
				t.Fatalf("published after all: %d", n)
			}
		})
	}
}
