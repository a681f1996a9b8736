package fakeminion

import (
	"context"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/oduflow/oduflow-go/receipt"
	"github.com/oduflow/oduflow-go/salt/salttest"
)

func TestRunStatusLifecycle(t *testing.T) {
	ctx := context.Background()
	id := "client-" + uuid.NewString()
	m := NewModel(id, WithResult(receipt.ProfileProduction, Result{Status: receipt.StatusFailed, Passed: 2, Total: 3}))
	req, jid := uuid.NewString(), "20261129120000000001"
	status := func() receipt.Receipt {
		ret, code := m.Handle(ctx, salttest.Job{JID: "20261129120000000009", Fun: "oduflow_job.status",
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
	ret, _ := m.Handle(ctx, salttest.Job{JID: jid, Fun: "oduflow_job.run", Args: []any{req, "production", ""}, MinionID: id})
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
	m.Handle(ctx, salttest.Job{JID: jid, Fun: "oduflow_job.run", Args: []any{req, "production", ""}, MinionID: id})
	if m.Runs() != 1 {
		t.Fatalf("runs %d", m.Runs())
	}
	if ret, _ := m.Handle(ctx, salttest.Job{Fun: "oduflow_job.capabilities", MinionID: id}); ret.(map[string]any)["protocol"] != int64(1) {
		t.Fatalf("%v", ret)
	}
}

func TestHoldKeepsRunning(t *testing.T) {
	ctx := context.Background()
	id := "client-" + uuid.NewString()
	m := NewModel(id, WithHold())
	req, jid := uuid.NewString(), "20261129120000000002"
	done := make(chan any)
	go func() {
		ret, _ := m.Handle(ctx, salttest.Job{JID: jid, Fun: "oduflow_job.run", Args: []any{req, "configure", ""}, MinionID: id})
		done <- ret
	}()
	for m.Runs() == 0 {
		// wait for the run to register
	}
	ret, _ := m.Handle(ctx, salttest.Job{JID: "20261129120000000003", Fun: "oduflow_job.status", Args: []any{req, jid, "configure"}, MinionID: id})
	if r, err := receipt.FromValue(ret); err != nil || r.Status != receipt.StatusRunning {
		t.Fatalf("%+v %v", r, err)
	}
	m.Release()
	if r, err := receipt.FromValue(<-done); err != nil || r.Status != receipt.StatusSucceeded {
		t.Fatalf("%+v %v", r, err)
	}
}

func TestCustomRunBindsDigest(t *testing.T) {
	ctx := context.Background()
	id := "client-" + uuid.NewString()
	m := NewModel(id)
	high := map[string]any{"motd": map[string]any{"file": []any{map[string]any{"name": "/etc/motd"}, "managed"}}}
	digest, err := receipt.Digest(high)
	if err != nil {
		t.Fatal(err)
	}
	canon, _ := receipt.CanonicalJSON(high)
	data := `{"digest":"` + digest + `","high":` + string(canon) + `}`
	run := func(req, jid, data string) (any, int) {
		return m.Handle(ctx, salttest.Job{JID: jid, Fun: "oduflow_job.run", Args: []any{req, "custom", data}, MinionID: id})
	}
	status := func(req, jid string) receipt.Receipt {
		ret, _ := m.Handle(ctx, salttest.Job{JID: "20261129120000000099", Fun: "oduflow_job.status",
			Args: []any{req, jid, "custom"}, MinionID: id})
		r, err := receipt.FromValue(ret)
		if err != nil {
			t.Fatalf("status: %v %v", ret, err)
		}
		return r
	}
	req, jid := uuid.NewString(), "20261129120000000010"
	ret, code := run(req, jid, data)
	r, err := receipt.FromValue(ret)
	if code != 0 || err != nil || r.Status != receipt.StatusSucceeded || r.StateDigest != digest {
		t.Fatalf("run: %v %d %v", ret, code, err)
	}
	b := receipt.Binding{MinionID: id, RequestID: req, JID: jid, Profile: receipt.ProfileCustom, StateDigest: digest}
	if err := b.Check(r); err != nil {
		t.Fatal(err)
	}
	if s := status(req, jid); s != r {
		t.Fatalf("status %+v != run %+v", s, r)
	}
	// A payload whose digest does not match its high data is refused before any record.
	other := strings.Replace(data, "/etc/motd", "/etc/issue", 1)
	req2, jid2 := uuid.NewString(), "20261129120000000011"
	if ret, code := run(req2, jid2, other); code != 1 || ret != "oduflow_job: state digest mismatch" {
		t.Fatalf("mismatch: %v %d", ret, code)
	}
	if s := status(req2, jid2); s.Status != receipt.StatusNotStarted {
		t.Fatalf("after refusal: %+v", s)
	}
	for _, bad := range []string{"", "{}", `{"digest":"` + digest + `"}`, `{"digest":"x","high":{"a":{}}}`,
		`{"digest":"` + digest + `","high":{},"extra":1}`, "not json"} {
		if ret, code := run(uuid.NewString(), "20261129120000000012", bad); code != 1 {
			t.Fatalf("%q accepted: %v", bad, ret)
		}
	}
	// Fixed profiles take no state data.
	ret, code = m.Handle(ctx, salttest.Job{JID: "20261129120000000013", Fun: "oduflow_job.run",
		Args: []any{uuid.NewString(), "configure", data}, MinionID: id})
	if code != 1 {
		t.Fatalf("fixed profile with data: %v", ret)
	}
	if m.Runs() != 1 {
		t.Fatalf("runs %d", m.Runs())
	}
}
