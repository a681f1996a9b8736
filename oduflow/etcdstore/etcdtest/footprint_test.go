package etcdtest

import (
	"context"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/oduflow/oduflow-go/oduflow/claims"
	"github.com/oduflow/oduflow-go/receipt"
)

// TestClaimFootprint measures what one claim costs in etcd's backend (the figure the package doc uses to
// size the 2 GiB default quota): n claims each go through the worker's four writes, then the history is
// compacted and the backend defragmented.
func TestClaimFootprint(t *testing.T) {
	if testing.Short() {
		t.Skip("measures backend size")
	}
	ctx := context.Background()
	cl := startCluster(t, 1)
	s := openStores(t, cl.clients, "/oduflow", 1)[0]
	cli := s.Client()
	size := func() int64 {
		t.Helper()
		if _, err := cli.Defragment(ctx, cl.clients[0]); err != nil {
			t.Fatal(err)
		}
		st, err := cli.Status(ctx, cl.clients[0])
		if err != nil {
			t.Fatal(err)
		}
		return st.DbSize
	}
	before := size()
	const n = 400
	m := newMinion()
	for i := 0; i < n; i++ {
		c := newClaim(m)
		c.StateDigest = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
		if err := s.Create(ctx, c); err != nil {
			t.Fatal(err)
		}
		cur := c
		for _, step := range []func(*claims.Claim){
			func(n *claims.Claim) {
				now := time.Now().UTC()
				n.Phase, n.DispatchedAt = claims.PhaseDispatching, &now
			},
			func(n *claims.Claim) { n.Phase = claims.PhaseDispatched },
			func(n *claims.Claim) {
				now := time.Now().UTC()
				n.Phase, n.Status, n.Passed, n.Total = claims.PhaseTerminal, receipt.StatusSucceeded, 60, 60
				n.Evidence, n.FinishedAt = "receipt", &now
			},
		} {
			next := *cur
			step(&next)
			out, err := s.CompareAndSwap(ctx, &next)
			if err != nil {
				t.Fatal(err)
			}
			cur = out
		}
	}
	full := size()
	resp, err := cli.Get(ctx, "/")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Compact(ctx, resp.Header.Revision, clientv3.WithCompactPhysical()); err != nil {
		t.Fatal(err)
	}
	compacted := size()
	perFull, perCompacted := (full-before)/n, (compacted-before)/n
	t.Logf("backend per claim: %d bytes with its 4 revisions, %d bytes compacted; 2 GiB holds about %d claims compacted",
		perFull, perCompacted, (2<<30)/max(perCompacted, 1))
	if perCompacted > 4096 || perCompacted <= 0 {
		t.Fatalf("a compacted claim costs %d bytes, the package doc assumes well under 4 KiB", perCompacted)
	}
}
