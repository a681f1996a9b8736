package simminion

import (
	"context"
	"testing"

	"github.com/google/uuid"

	"github.com/oduflow/oduflow-go/internal/saltsim"
	"github.com/oduflow/oduflow-go/receipt"
)

func TestRunStatusLifecycle(t *testing.T) {
	ctx := context.Background()
	id := "client-" + uuid.NewString()
	m := New(id, WithResult(receipt.ProfileProduction, Result{Status: receipt.StatusFailed, Passed: 2, Total: 3}))
	req, jid := uuid.NewString(), "20261129120000000001"
	status := func() receipt.Receipt {
		ret, code := m.Handle(ctx, saltsim.Job{JID: "20261129120000000009", Fun: "oduflow_job.status",
			Args: []any{req, jid, "production"}, MinionID: id})
		r, err := receipt.FromValue(ret)
		if code != 0 || err != nil {
			t.Fatalf("status: %v %v", ret, err)
		}
		return r
	}
	if r := status(); r.Status != receipt.StatusNotStarted {
		t.Fatalf("%+v", r)
	}
	ret, _ := m.Handle(ctx, saltsim.Job{JID: jid, Fun: "oduflow_job.run", Args: []any{req, "production", ""}, MinionID: id})
	r, err := receipt.FromValue(ret)
	if err != nil || r.Status != receipt.StatusFailed || r.Passed != 2 || r.Total != 3 {
		t.Fatalf("run: %+v %v", r, err)
	}
	if err := (receipt.Binding{MinionID: id, RequestID: req, JID: jid, Profile: receipt.ProfileProduction}).Check(r); err != nil {
		t.Fatal(err)
	}
	if s := status(); s != r {
		t.Fatalf("status %+v != run %+v", s, r)
	}
	// A repeated publication of the same request never runs again.
	m.Handle(ctx, saltsim.Job{JID: jid, Fun: "oduflow_job.run", Args: []any{req, "production", ""}, MinionID: id})
	if m.Runs() != 1 {
		t.Fatalf("runs %d", m.Runs())
	}
	if ret, _ := m.Handle(ctx, saltsim.Job{Fun: "oduflow_job.capabilities", MinionID: id}); ret.(map[string]any)["protocol"] != int64(1) {
		t.Fatalf("%v", ret)
	}
}

func TestHoldKeepsRunning(t *testing.T) {
	ctx := context.Background()
	id := "client-" + uuid.NewString()
	m := New(id, WithHold())
	req, jid := uuid.NewString(), "20261129120000000002"
	done := make(chan any)
	go func() {
		ret, _ := m.Handle(ctx, saltsim.Job{JID: jid, Fun: "oduflow_job.run", Args: []any{req, "configure", ""}, MinionID: id})
		done <- ret
	}()
	for m.Runs() == 0 {
		// wait for the run to register
	}
	ret, _ := m.Handle(ctx, saltsim.Job{JID: "20261129120000000003", Fun: "oduflow_job.status", Args: []any{req, jid, "configure"}, MinionID: id})
	if r, err := receipt.FromValue(ret); err != nil || r.Status != receipt.StatusRunning {
		t.Fatalf("%+v %v", r, err)
	}
	m.Release()
	if r, err := receipt.FromValue(<-done); err != nil || r.Status != receipt.StatusSucceeded {
		t.Fatalf("%+v %v", r, err)
	}
}
