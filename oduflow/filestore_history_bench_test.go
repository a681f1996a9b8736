package oduflow

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/oduflow/oduflow-go/oduflow/claims"
	"github.com/oduflow/oduflow-go/oduflow/oduflowtest/fakeminion"
	"github.com/oduflow/oduflow-go/receipt"
)

// BenchmarkClientHistory measures Start (until its worker's preflight has decided: the minion advertises
// no receipt proofs, so every request ends failed right after the quarantine check and the capabilities
// call) and Status, for a client with 10 and with 10,000 resolved claims in its history, on the file
// store. The preflight reads only the client's unresolved set (open/), so the two sizes cost the same
// (goal: the 10,000-claim case within 1.3x of the 10-claim one). The etcd store's twin is in etcdtest.
func BenchmarkClientHistory(b *testing.B) {
	for _, n := range []int{10, 10000} {
		b.Run(fmt.Sprintf("claims=%d", n), func(b *testing.B) {
			ctx := context.Background()
			e := startSim(b)
			m := e.addMinion(fakeminion.WithoutProof())
			done := make(chan struct{}, 1)
			d := e.dispatcher(WithHooks(Hooks{Outcome: func(context.Context, RequestRef, receipt.Status, string) { done <- struct{}{} }}))
			// The store has listed before (its one-time index scan is done), as one in service has.
			if _, err := d.store.ListByClient(ctx, m.ID()); err != nil {
				b.Fatal(err)
			}
			seedFileHistory(b, d.store, m.ID(), n)
			var last string
			b.Run("start", func(b *testing.B) {
				for b.Loop() {
					last = receipt.NewRequestID()
					if _, err := d.Start(ctx, m.ID(), last, receipt.ProfileConfigure); err != nil {
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
					if r, err := d.Status(ctx, m.ID(), last, receipt.ProfileConfigure); err != nil || r.Status != receipt.StatusFailed {
						b.Fatalf("%+v %v", r, err)
					}
				}
			})
		})
	}
}

// seedFileHistory creates n resolved claims (terminal failed at preflight) of minion, 32 at a time.
func seedFileHistory(b *testing.B, st claims.ClaimStore, minion string, n int) {
	b.Helper()
	ctx := context.Background()
	sem := make(chan struct{}, 32)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	for range n {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			c := newTestClaim(minion)
			err := st.Create(ctx, c)
			if err == nil {
				now := time.Now().UTC()
				c.Phase, c.Status, c.Total, c.ErrorCode, c.Evidence, c.FinishedAt = claims.PhaseTerminal, receipt.StatusFailed, 1, claims.CodeCapability, evidencePreflight, &now
				_, err = st.CompareAndSwap(ctx, c)
			}
			if err != nil {
				mu.Lock()
				first = err
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if first != nil {
		b.Fatal(first)
	}
}
