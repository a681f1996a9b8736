package etcdtest

import (
	"context"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/oduflow/oduflow-go/oduflow/claims"
	"github.com/oduflow/oduflow-go/receipt"
)

// TestOpenIndex: the client's unresolved set follows every transition (created, dispatched, unknown,
// resolved by a receipt, by an assertion) and a store whose claims predate the index gets it built once,
// by the first ListUnresolved.
func TestOpenIndex(t *testing.T) {
	ctx := context.Background()
	stores := newStores(t, 2)
	a, b := stores[0], stores[1]
	minion := newMinion()
	ids := func(cs []*claims.Claim) map[string]bool {
		out := make(map[string]bool)
		for _, c := range cs {
			out[c.RequestID] = true
		}
		return out
	}
	open := func(want ...string) {
		t.Helper()
		got, err := b.ListUnresolved(ctx, minion)
		if err != nil {
			t.Fatal(err)
		}
		if g := ids(got); len(g) != len(want) {
			t.Fatalf("unresolved %v, want %v", g, want)
		} else {
			for _, w := range want {
				if !g[w] {
					t.Fatalf("unresolved %v, want %v", g, want)
				}
			}
		}
	}
	c1, c2 := newClaim(minion), newClaim(minion)
	for _, c := range []*claims.Claim{c1, c2} {
		if err := a.Create(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	open(c1.RequestID, c2.RequestID)
	now := time.Now().UTC()
	c1.Phase, c1.DispatchedAt = claims.PhaseDispatching, &now
	c1, _ = a.CompareAndSwap(ctx, c1)
	c1.Phase, c1.Status, c1.FinishedAt = claims.PhaseTerminal, receipt.StatusUnknown, &now
	c1, _ = a.CompareAndSwap(ctx, c1)
	c2.Phase, c2.Status, c2.FinishedAt = claims.PhaseTerminal, receipt.StatusFailed, &now
	if _, err := a.CompareAndSwap(ctx, c2); err != nil {
		t.Fatal(err)
	}
	open(c1.RequestID) // terminal unknown after dispatch still quarantines
	c1.Phase, c1.Status = claims.PhaseAsserted, receipt.StatusFailed
	if _, err := a.CompareAndSwap(ctx, c1); err != nil {
		t.Fatal(err)
	}
	open()
	if all, err := b.ListByClient(ctx, minion); err != nil || len(all) != 2 {
		t.Fatalf("ListByClient: %d %v", len(all), err)
	}

	// Claims written before the index: a fresh prefix whose claims have no open entries and no marker.
	fresh := newStore(t)
	m2 := newMinion()
	c3 := newClaim(m2)
	if err := fresh.Create(ctx, c3); err != nil {
		t.Fatal(err)
	}
	cli := fresh.Client()
	if _, err := cli.Delete(ctx, fresh.Prefix()+"/open/", clientv3.WithPrefix()); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Delete(ctx, fresh.Prefix()+"/meta/open-index-v1"); err != nil {
		t.Fatal(err)
	}
	late := openStores(t, fresh.Client().Endpoints(), fresh.Prefix(), 1)[0]
	got, err := late.ListUnresolved(ctx, m2)
	if err != nil || len(got) != 1 || got[0].RequestID != c3.RequestID {
		t.Fatalf("ListUnresolved over claims older than the index: %v %v", got, err)
	}
}
