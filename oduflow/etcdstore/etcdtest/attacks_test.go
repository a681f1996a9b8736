package etcdtest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/oduflow/oduflow-go/internal/testwait"
	"github.com/oduflow/oduflow-go/oduflow"
	"github.com/oduflow/oduflow-go/oduflow/claims"
	"github.com/oduflow/oduflow-go/oduflow/etcdstore"
	"github.com/oduflow/oduflow-go/receipt"
)

// The store-side attacks of issue 17 ("the store can be rewound or edited into a second run"): each test
// here failed on the code before the fix and names what it proves.

// attackTimers keep a dispatched request unresolved for a short window (the fake master never returns a
// run), then unknown.
func attackTimers() oduflow.Timers {
	return oduflow.Timers{ExecutionWait: 2 * time.Second, HardDeadline: 3 * time.Second,
		StatusExpiry: 4 * time.Second, LaunchGrace: 20 * time.Second, LeaseWait: 5 * time.Second, PollBudget: 1,
		CallTimeout: 2 * time.Second}
}

// fakeDispatcher is a Dispatcher on st whose master is m; the minion's accepted key is in a pki dir of
// its own.
func fakeDispatcher(t testing.TB, st *etcdstore.Store, m *fakeMaster, minion string, opts ...oduflow.Option) *oduflow.Dispatcher {
	t.Helper()
	pki := t.TempDir()
	if err := os.MkdirAll(filepath.Join(pki, "minions"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(pki, "minions", minion), newProtoMinion(minion).publicKeyPEM(), 0o644); err != nil {
		t.Fatal(err)
	}
	all := append([]oduflow.Option{oduflow.WithClaimStore(st), oduflow.WithTimers(attackTimers()),
		oduflow.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))), oduflow.WithPKIDir(pki)}, opts...)
	d, err := oduflow.New(m, m, all...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close(closedContext()) })
	return d
}

func (m *fakeMaster) runsOf(req string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.runs[req]
}

// drain closes d and waits for its workers to end (Close drains them): after it, d publishes nothing
// more, so a count of publications is final. It replaces a sleep for a guess of how late a worker could
// publish.
func drain(t *testing.T, d *oduflow.Dispatcher) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := d.Close(ctx); err != nil {
		t.Fatalf("a worker still ran at the drain: %v", err)
	}
}

// waitRuns waits until req was published n times.
func waitRuns(t *testing.T, m *fakeMaster, req string, n int) {
	t.Helper()
	testwait.Until(t, fmt.Sprintf("request not published %d times", n), 30*time.Second,
		func() bool { return m.runsOf(req) >= n })
}

// TestDeletedClaimNotRepublished: a claim key deleted after its request was published (its index entry
// left behind) does not let the same request id be created again under a new JID and published a
// second time: Start fails with ErrCorruptClaim and nothing more is published. Before the fix the
// create-if-absent compared only the claim key: the request ran twice.
func TestDeletedClaimNotRepublished(t *testing.T) {
	ctx := context.Background()
	st := newStore(t, windowsOf(attackTimers()))
	m := &fakeMaster{runs: make(map[string]int)}
	minion, req := newMinion(), receipt.NewRequestID()
	d := fakeDispatcher(t, st, m, minion)
	if _, err := d.Start(ctx, minion, req, receipt.ProfileConfigure); err != nil {
		t.Fatal(err)
	}
	waitRuns(t, m, req, 1)
	// The worker ends (unknown: the fake master never returns) and frees the client lease.
	testwait.Until(t, "first run never final", 30*time.Second, func() bool {
		c, err := st.Get(ctx, req)
		return err == nil && c.Phase.Final()
	})
	if _, err := st.Client().Delete(ctx, st.Prefix()+"/claims/"+req); err != nil {
		t.Fatal(err)
	}
	_, err := d.Start(ctx, minion, req, receipt.ProfileConfigure)
	if !errors.Is(err, claims.ErrCorruptClaim) {
		t.Errorf("Start after the claim was deleted: %v, want ErrCorruptClaim", err)
	}
	c := newClaim(minion)
	c.RequestID = req
	if err := st.Create(ctx, c); !errors.Is(err, claims.ErrCorruptClaim) || errors.Is(err, claims.ErrClaimExists) {
		t.Errorf("Create of a used request id: %v, want ErrCorruptClaim only", err)
	}
	drain(t, d) // a worker, had one started, has published by the time Close has drained it
	if n := m.runsOf(req); n != 1 {
		t.Fatalf("request published %d times", n)
	}
}

// TestLeaselessLockKeys: a request-lock key written without an etcd lease (nobody's keepalive will ever
// let it expire) is not a lock: Status and Quarantine both say ErrCorruptClaim (before the fix: running
// forever, and an empty quarantine while every Start of the client ended quarantined), and a client
// lease key without a lease fails AcquireClientLease at once with ErrCorruptClaim instead of blocking
// the client for ever as lease_busy.
func TestLeaselessLockKeys(t *testing.T) {
	ctx := context.Background()
	st := newStore(t, windowsOf(attackTimers()))
	m := &fakeMaster{runs: make(map[string]int)}
	minion := newMinion()
	d := fakeDispatcher(t, st, m, minion)
	c := newClaim(minion)
	if err := st.Create(ctx, c); err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	c.Phase, c.DispatchedAt = claims.PhaseDispatching, &now
	if _, err := st.CompareAndSwap(ctx, c); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Client().Put(ctx, st.Prefix()+"/locks/run/"+c.RequestID, "forged"); err != nil {
		t.Fatal(err)
	}
	_, err := d.Status(ctx, minion, c.RequestID, receipt.ProfileConfigure)
	if !errors.Is(err, claims.ErrCorruptClaim) {
		t.Errorf("Status with a lease-less request lock: %v, want ErrCorruptClaim", err)
	}
	q, err := d.Quarantine(ctx, minion)
	if !errors.Is(err, claims.ErrCorruptClaim) {
		t.Errorf("Quarantine with a lease-less request lock: %v %v, want ErrCorruptClaim", q, err)
	}
	if _, err := st.RequestLockHeld(ctx, c.RequestID); !errors.Is(err, claims.ErrCorruptClaim) {
		t.Errorf("RequestLockHeld: %v, want ErrCorruptClaim", err)
	}
	if _, err := st.TryRequestLock(ctx, c.RequestID); !errors.Is(err, claims.ErrCorruptClaim) {
		t.Errorf("TryRequestLock: %v, want ErrCorruptClaim", err)
	}
	other := newMinion()
	if _, err := st.Client().Put(ctx, st.Prefix()+"/locks/client/"+other, "forged"); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	if _, err := st.AcquireClientLease(ctx, other, 3*time.Second); !errors.Is(err, claims.ErrCorruptClaim) {
		t.Errorf("AcquireClientLease of a lease-less key: %v, want ErrCorruptClaim", err)
	}
	if el := time.Since(t0); el > 2*time.Second {
		t.Errorf("AcquireClientLease waited %v for a key nobody will ever delete", el)
	}
}
