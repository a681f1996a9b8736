package main

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/oduflow/oduflow-go/examples/internal/oduflowenv"
	"github.com/oduflow/oduflow-go/oduflow/oduflowtest/fakeminion"
	"github.com/oduflow/oduflow-go/receipt"
	"github.com/oduflow/oduflow-go/salt/salttest"
)

// A request the HTTP controller started is stored under its client-scoped key; oduflowctl start with the
// caller's id answers that request (the id printed is the caller's) and never runs it a second time, and
// status reads it: at-most-once per (client, request) whichever tool started it. Before: a second run.
func TestStartAnswersTheControllersScopedRequest(t *testing.T) {
	t.Parallel()
	sim, err := salttest.Start(context.Background(), salttest.WithDir(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sim.Close() })
	minion := "client-" + receipt.NewRequestID()
	m := fakeminion.NewModel(minion, fakeminion.WithResult(receipt.ProfileConfigure, fakeminion.Result{Status: receipt.StatusSucceeded, Passed: 3, Total: 3}))
	if err := fakeminion.Add(sim, m); err != nil {
		t.Fatal(err)
	}
	env := []string{"ODUFLOW_SALT_PKI_DIR=" + sim.PKIDir(), "ODUFLOW_SALT_MASTER=" + sim.Addr(), "ODUFLOW_SALT_EVENTS=" + sim.EventsAddr(),
		"ODUFLOW_SALT_KEY_FILE=" + sim.KeyFile(), "ODUFLOW_STATE_DIR=" + filepath.Join(stateRoot(t), "claims")}
	id := receipt.NewRequestID()
	// What the controller stores for a caller's id on this client.
	must(t, run(t, env, "start", "configure", minion, oduflowenv.ScopedRequestID(minion, id), "--wait", "--interval", "50ms"), ExitOK)
	r := run(t, env, "start", "configure", minion, id, "--wait", "--interval", "50ms")
	must(t, r, ExitOK)
	if s := response(t, oneLine(t, r.stdout)); s["request_id"] != id || s["status"] != "succeeded" {
		t.Fatalf("start of the controller's request: %s", r)
	}
	if runs := m.Runs(); runs != 1 {
		t.Fatalf("runs %d, want 1", runs)
	}
	r = run(t, env, "status", "configure", minion, id)
	must(t, r, ExitOK)
	if s := response(t, oneLine(t, r.stdout)); s["request_id"] != id || s["status"] != "succeeded" {
		t.Fatalf("status: %s", r)
	}
}
