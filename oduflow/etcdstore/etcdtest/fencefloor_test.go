package etcdtest

import (
	"context"
	"testing"

	"github.com/oduflow/oduflow-go/oduflow/oduflowtest/fakeminion"
	"github.com/oduflow/oduflow-go/receipt"
	"github.com/oduflow/oduflow-go/salt/salttest"
)

// TestMinionMarkAheadOfTheCluster: a minion whose fence mark is far above this cluster's revision (it was
// fenced through another cluster, or this one was restored from an earlier copy and restarted) runs the
// next requests, dispatched through two replicas: the first intent raises the client's fence base to the
// mark the worker read, later intents (either replica, the other's base cache stale) build on it, and
// every token is above the one before. Before floors every run was refused as fenced until the
// cluster's revision passed the mark.
func TestMinionMarkAheadOfTheCluster(t *testing.T) {
	ctx := context.Background()
	sim, err := salttest.Start(ctx, salttest.WithDir(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sim.Close() })
	const mark = 5_000_000
	m := fakeminion.NewModel(newMinion(), fakeminion.WithFenceMark(mark))
	if err := fakeminion.Add(sim, m); err != nil {
		t.Fatal(err)
	}
	stores := newStores(t, 2, windowsOf(crashTimers()))
	var last uint64
	for i := range 4 {
		d, err := newSaltDispatcher(sim.Addr(), sim.EventsAddr(), sim.KeyFile(), sim.PKIDir(), stores[i%2])
		if err != nil {
			t.Fatal(err)
		}
		req := receipt.NewRequestID()
		if _, err := d.Start(ctx, m.ID(), req, receipt.ProfileConfigure); err != nil {
			t.Fatal(err)
		}
		c := waitFinalClaim(t, d, m.ID(), req)
		if c.Status != receipt.StatusSucceeded || c.FenceToken <= mark || c.FenceToken <= last {
			t.Fatalf("request %d (replica %d): %+v; token %d after %d, mark %d", i, i%2, c, c.FenceToken, last, mark)
		}
		if got := m.FenceMark(); got != int64(c.FenceToken) {
			t.Fatalf("minion mark %d after the run of token %d", got, c.FenceToken)
		}
		last = c.FenceToken
		_ = d.Close(closedContext())
	}
	if m.Runs() != 4 {
		t.Fatalf("minion runs %d, want 4", m.Runs())
	}
}
