package etcdtest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/oduflow/oduflow-go/oduflow"
	"github.com/oduflow/oduflow-go/oduflow/claims"
	"github.com/oduflow/oduflow-go/oduflow/oduflowtest/fakeminion"
	"github.com/oduflow/oduflow-go/receipt"
	"github.com/oduflow/oduflow-go/salt/salttest"
)

// Replica A is closed in the middle of its runs (its drain cut short): every request it published is
// released at once (unknown, adoptable); replica B, sharing the etcd prefix, adopts them and polls each
// to its minion's result: every request terminal, one publication each, no client quarantined, and
// Unresolved (a paged scan of the open index across clients) ends empty.
func TestReplicaClosedMidRunIsAdopted(t *testing.T) {
	ctx := context.Background()
	sim, err := salttest.Start(ctx, salttest.WithDir(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sim.Close() })
	const n = 6
	var minions []*fakeminion.Model
	for range n {
		m := fakeminion.NewModel(newMinion(), fakeminion.WithHold())
		if err := fakeminion.Add(sim, m); err != nil {
			t.Fatal(err)
		}
		minions = append(minions, m)
	}
	stores := newStores(t, 2, windowsOf(crashTimers()))
	a, err := newSaltDispatcher(sim.Addr(), sim.EventsAddr(), sim.KeyFile(), sim.PKIDir(), stores[0])
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Close(closedContext()) })
	reqs := make([]string, n)
	for i, m := range minions {
		reqs[i] = receipt.NewRequestID()
		if _, err := a.Start(ctx, m.ID(), reqs[i], receipt.ProfileConfigure); err != nil {
			t.Fatal(err)
		}
	}
	for i, m := range minions {
		waitFor(t, "dispatched", func() bool {
			c, err := a.Lookup(ctx, m.ID(), reqs[i])
			return err == nil && c.Phase == claims.PhaseDispatched
		})
	}
	cctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if err := a.Close(cctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("drain cut short: %v", err)
	}
	if _, err := a.Start(ctx, minions[0].ID(), receipt.NewRequestID(), receipt.ProfileConfigure); !errors.Is(err, oduflow.ErrClosed) {
		t.Fatalf("Start on a closed replica: %v", err)
	}
	b, err := newSaltDispatcher(sim.Addr(), sim.EventsAddr(), sim.KeyFile(), sim.PKIDir(), stores[1],
		oduflow.WithAdoption(50*time.Millisecond), oduflow.WithMaxAdoptions(3))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close(closedContext()) })
	// Released by A, the requests read unknown until B adopts them (at once: no launch grace).
	for _, m := range minions {
		m.Release()
	}
	for i, m := range minions {
		c := waitFinalClaim(t, b, m.ID(), reqs[i])
		if c.Status != receipt.StatusSucceeded || c.Evidence != "receipt" {
			t.Fatalf("adopted request: %+v", c)
		}
		if got := sim.PublicationCount("oduflow_job.run", c.JID); got != 1 {
			t.Fatalf("publications of %s: %d", reqs[i], got)
		}
		if q, err := b.Quarantine(ctx, m.ID()); err != nil || len(q) != 0 {
			t.Fatalf("quarantine: %+v %v", q, err)
		}
		if m.Runs() != 1 {
			t.Fatalf("runs on %s: %d", m.ID(), m.Runs())
		}
	}
	for u, err := range b.Unresolved(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		t.Errorf("left unresolved: %+v", u.Claim)
	}
}

// ScanUnresolved pages through the open index of every client (more entries than one page), yields
// each unresolved claim once, and drops a claim once it is resolved.
func TestScanUnresolvedAcrossClients(t *testing.T) {
	ctx := context.Background()
	st := newStore(t)
	want := map[string]bool{}
	for i := range 150 {
		c := newClaim(newMinion())
		if i%3 == 0 { // several claims of one client too
			c = newClaim("client-00000000-0000-0000-0000-00000000000" + string(rune('0'+i%10)))
		}
		if err := st.Create(ctx, c); err != nil {
			t.Fatal(err)
		}
		want[c.RequestID] = true
	}
	resolved := newClaim(newMinion())
	if err := st.Create(ctx, resolved); err != nil {
		t.Fatal(err)
	}
	next := *resolved
	next.Phase, next.Status, next.Passed, next.Total = claims.PhaseTerminal, receipt.StatusFailed, 0, 1
	if _, err := st.CompareAndSwap(ctx, &next); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for c, err := range st.ScanUnresolved(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		if seen[c.RequestID] {
			t.Fatalf("yielded twice: %s", c.RequestID)
		}
		seen[c.RequestID] = true
		if c.RequestID == resolved.RequestID {
			t.Fatal("a resolved claim is still in the open index")
		}
	}
	for r := range want {
		if !seen[r] {
			t.Fatalf("unresolved claim %s not yielded (%d of %d)", r, len(seen), len(want))
		}
	}
}
