package oduflowtest_test

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/oduflow/oduflow-go/oduflow"
	"github.com/oduflow/oduflow-go/oduflow/oduflowtest"
	"github.com/oduflow/oduflow-go/oduflow/oduflowtest/fakeminion"
	"github.com/oduflow/oduflow-go/receipt"
	"github.com/oduflow/oduflow-go/salt"
	"github.com/oduflow/oduflow-go/salt/salttest"
)

// The memory store serves a real dispatcher end to end (simulated master and minion over real sockets):
// what an embedding service's unit test does. No claim directory is created.
func TestMemoryStoreBehindDispatcher(t *testing.T) {
	ctx := context.Background()
	sim, err := salttest.Start(ctx, salttest.WithDir(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sim.Close() })
	m := fakeminion.NewModel("client-" + receipt.NewRequestID())
	if err := fakeminion.Add(sim, m); err != nil {
		t.Fatal(err)
	}
	key, err := os.ReadFile(sim.KeyFile())
	if err != nil {
		t.Fatal(err)
	}
	keyFile := filepath.Join(t.TempDir(), ".root_key")
	if err := os.WriteFile(keyFile, key, 0o600); err != nil {
		t.Fatal(err)
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	client, err := salt.NewClient(sim.Addr(), salt.WithAuth(salt.UserKey("root", keyFile)),
		salt.WithRequestTimeout(2*time.Second), salt.WithLogger(quiet))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Close() })
	st := oduflowtest.NewMemoryStore()
	unused := filepath.Join(t.TempDir(), "no-claims-here")
	d, err := oduflow.New(client, oduflow.SaltEvents(sim.EventsAddr(), salt.WithLogger(quiet)), oduflow.WithPKIDir(sim.PKIDir()),
		oduflow.WithClaimStore(st), oduflow.WithClaimDir(unused), oduflow.WithLogger(quiet),
		oduflow.WithTimers(oduflow.Timers{ExecutionWait: 8 * time.Second, HardDeadline: 9 * time.Second,
			StatusExpiry: 10 * time.Second, LaunchGrace: oduflow.DefaultTimers().LaunchGrace, LeaseWait: 2 * time.Second,
			PollBudget: 16, CallTimeout: 2 * time.Second}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close(closedContext()) })

	req := receipt.NewRequestID()
	first, err := d.Start(ctx, m.ID(), req, receipt.ProfileConfigure)
	if err != nil || first.JID == nil {
		t.Fatalf("Start: %+v %v", first, err)
	}
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for r, err := range d.Watch(wctx, m.ID(), req, receipt.ProfileConfigure) { // woken by the worker's writes
		if err != nil {
			t.Fatalf("claim not final: %+v %v", r, err)
		}
	}
	if c, err := st.Get(ctx, req); err != nil || !c.Phase.Final() {
		t.Fatalf("claim not final: %+v %v", c, err)
	}
	again, err := d.Start(ctx, m.ID(), req, receipt.ProfileConfigure)
	if err != nil || again.Status != receipt.StatusSucceeded || *again.JID != *first.JID {
		t.Fatalf("repeated Start: %+v %v", again, err)
	}
	if runs := sim.PublicationCount("oduflow_job.run", ""); runs != 1 || m.Runs() != 1 {
		t.Fatalf("published %d runs, minion ran %d (want 1, 1)", runs, m.Runs())
	}
	if _, err := os.Stat(unused); !os.IsNotExist(err) {
		t.Fatalf("claim directory touched: %v", err)
	}
}

// closedContext is a context that has already ended: Close(closedContext()) stops at once, draining
// nothing (what Close did before it took a drain deadline).
func closedContext() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}
