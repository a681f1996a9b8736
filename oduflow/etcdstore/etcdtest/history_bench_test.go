package etcdtest

import (
	"context"
	"fmt"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/oduflow/oduflow-go/oduflow"
	"github.com/oduflow/oduflow-go/oduflow/claims"
	"github.com/oduflow/oduflow-go/receipt"
)

// BenchmarkClientHistory measures Start (until its worker's preflight has decided: the fake master
// advertises no receipt proofs, so every request ends failed right after the quarantine check and the
// capabilities call) and Status, for a client with 10 and with 10,000 resolved claims in its history,
// on the etcd store. The preflight reads only the client's unresolved set, so the two sizes cost the
// same (goal: the 10,000-claim case within 1.3x of the 10-claim one) once the cluster has compacted the
// history (until then etcd's range skips the deleted open entries of resolved claims one by one).
func BenchmarkClientHistory(b *testing.B) {
	for _, n := range []int{10, 10000} {
		b.Run(fmt.Sprintf("claims=%d", n), func(b *testing.B) {
			ctx := context.Background()
			st := newStore(b, windowsOf(attackTimers()))
			minion := newMinion()
			seedHistory(b, st, minion, n)
			// As a cluster in service is (--auto-compaction-retention): history compacted, so the deleted
			// open entries of resolved claims are gone from the range the preflight reads.
			if r, err := st.Client().Get(ctx, "/"); err != nil {
				b.Fatal(err)
			} else if _, err := st.Client().Compact(ctx, r.Header.Revision, clientv3.WithCompactPhysical()); err != nil {
				b.Fatal(err)
			}
			done := make(chan struct{}, 1)
			d := fakeDispatcher(b, st, &fakeMaster{runs: make(map[string]int), noProof: true}, minion,
				oduflow.WithHooks(oduflow.Hooks{Outcome: func(context.Context, oduflow.RequestRef, receipt.Status, string) { done <- struct{}{} }}))
			var last string
			b.Run("start", func(b *testing.B) {
				for b.Loop() {
					last = receipt.NewRequestID()
					if _, err := d.Start(ctx, minion, last, receipt.ProfileConfigure); err != nil {
						b.Fatal(err)
					}
					select {
					case <-done:
					case <-time.After(30 * time.Second):
						b.Fatal("no outcome")
					}
				}
			})
			b.Run("status", func(b *testing.B) {
				for b.Loop() {
					if r, err := d.Status(ctx, minion, last, receipt.ProfileConfigure); err != nil || r.Status != receipt.StatusFailed {
						b.Fatalf("%+v %v", r, err)
					}
				}
			})
		})
	}
}

// seedHistory creates n resolved claims (terminal failed) of minion.
func seedHistory(b *testing.B, st interface {
	Create(context.Context, *claims.Claim) error
	CompareAndSwap(context.Context, *claims.Claim) (*claims.Claim, error)
}, minion string, n int) {
	b.Helper()
	ctx := context.Background()
	g := newLimited(32)
	for range n {
		g.Go(func() error {
			c := newClaim(minion)
			if err := st.Create(ctx, c); err != nil {
				return err
			}
			now := time.Now().UTC()
			c.Phase, c.Status, c.ErrorCode, c.Evidence, c.FinishedAt = claims.PhaseTerminal, receipt.StatusFailed, claims.CodeCapability, "preflight", &now
			_, err := st.CompareAndSwap(ctx, c)
			return err
		})
	}
	if err := g.Wait(); err != nil {
		b.Fatal(err)
	}
}
