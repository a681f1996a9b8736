package etcdtest

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/oduflow/oduflow-go/oduflow/claims"
	"github.com/oduflow/oduflow-go/oduflow/etcdstore"
)

// TestExternalCluster runs the store against a cluster started outside the test (for example Debian's
// etcd 3.4), named by ODUFLOW_ETCD_ENDPOINTS (comma-separated client URLs). It checks the features the
// store needs from the server: create-if-absent, fenced and guarded transactions, prefix reads at a
// revision inside a read transaction, leases with keepalive and revoke, and watches.
func TestExternalCluster(t *testing.T) {
	eps := os.Getenv("ODUFLOW_ETCD_ENDPOINTS")
	if eps == "" {
		t.Skip("ODUFLOW_ETCD_ENDPOINTS is not set (comma-separated client URLs of an etcd cluster to test against)")
	}
	ctx := context.Background()
	st := openStores(t, strings.Split(eps, ","), "/external-"+uuid.NewString()[:8], 2, etcdstore.WithTTL(shortTTL))
	a, b := st[0], st[1]
	resp, err := a.Client().Status(ctx, strings.Split(eps, ",")[0])
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("server version %s", resp.Version)

	m := newMinion()
	c := newClaim(m)
	if err := a.Create(ctx, c); err != nil {
		t.Fatal(err)
	}
	if err := b.Create(ctx, newClaimFor(c)); !errors.Is(err, claims.ErrClaimExists) {
		t.Fatalf("second create: %v", err)
	}
	for range 3 {
		if err := a.Create(ctx, newClaim(m)); err != nil {
			t.Fatal(err)
		}
	}
	if l, err := b.ListByClient(ctx, m); err != nil || len(l) != 4 {
		t.Fatalf("list %d %v", len(l), err)
	}
	r, err := a.TryRequestLock(ctx, c.RequestID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.TryRequestLock(ctx, c.RequestID); !errors.Is(err, claims.ErrLeaseBusy) {
		t.Fatalf("second lock: %v", err)
	}
	l, err := a.AcquireClientLease(ctx, m, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	// a holder that keeps its lease 200 ms: the waiter must be woken by its release
	go func() { time.Sleep(200 * time.Millisecond); _ = l.Release() }()
	lb, err := b.AcquireClientLease(ctx, m, 5*time.Second) // woken by the watch
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.CompareAndSwapHeld(ctx, dispatchingOf(c), r, l); !errors.Is(err, claims.ErrLeaseLost) {
		t.Fatalf("guarded CAS with a released lease: %v", err)
	}
	if _, err := b.Client().Revoke(ctx, lb.(*etcdstore.Lease).LeaseID()); err != nil {
		t.Fatal(err)
	}
	if _, err := b.CompareAndSwapHeld(ctx, dispatchingOf(c), lb); !errors.Is(err, claims.ErrLeaseLost) {
		t.Fatalf("guarded CAS with a revoked lease: %v", err)
	}
	l2, err := a.AcquireClientLease(ctx, m, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	out, err := a.CompareAndSwapHeld(ctx, dispatchingOf(c), r, l2)
	if err != nil || out.Generation != 2 {
		t.Fatalf("guarded CAS: %+v %v", out, err)
	}
	_ = r.Release()
	_ = l2.Release()
	if held, err := b.RequestLockHeld(ctx, c.RequestID); err != nil || held {
		t.Fatalf("lock after release: %v %v", held, err)
	}
}
