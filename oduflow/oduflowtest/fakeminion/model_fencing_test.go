package fakeminion

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/oduflow/oduflow-go/receipt"
	"github.com/oduflow/oduflow-go/salt/salttest"
)

// fenceStep is one call of the fencing conformance script: the same job goes to the Go model and to
// the real module (through PythonHost), and both must answer alike.
type fenceStep struct {
	name   string
	job    salttest.Job
	code   int
	status receipt.Status // for code 0: the receipt's status
	fenced bool           // for code 0: a fenced receipt
	errHas string         // for code != 0: a phrase both error texts contain
}

func fencingScript(minion string) []fenceStep {
	reqs := make([]string, 10)
	for i := range reqs {
		reqs[i] = uuid.NewString()
	}
	jids := make([]string, 10)
	for i := range jids {
		jids[i] = newJID()
	}
	run := func(i int, profile string, kwargs map[string]any) salttest.Job {
		return salttest.Job{JID: jids[i], Fun: "oduflow_job.run", Args: []any{reqs[i], profile}, Kwargs: kwargs, MinionID: minion}
	}
	fence := func(i int, jid, profile string, token any) salttest.Job {
		return salttest.Job{JID: newJID(), Fun: "oduflow_job.fence", Args: []any{reqs[i], jid, profile, token}, MinionID: minion}
	}
	status := func(i int, profile string) salttest.Job {
		return salttest.Job{JID: newJID(), Fun: "oduflow_job.status", Args: []any{reqs[i], jids[i], profile}, MinionID: minion}
	}
	tok := func(n any) map[string]any { return map[string]any{"fence_token": n} }
	return []fenceStep{
		{name: "fence before the run", job: fence(0, jids[0], "configure", int64(5)), status: receipt.StatusFailed, fenced: true},
		{name: "the fenced publication arrives", job: run(0, "configure", tok(int64(5))), status: receipt.StatusFailed, fenced: true},
		{name: "status of the fenced request", job: status(0, "configure"), status: receipt.StatusFailed, fenced: true},
		{name: "stale token equal to the mark", job: run(1, "configure", tok(int64(5))), status: receipt.StatusFailed, fenced: true},
		{name: "stale token below the mark", job: run(2, "production", tok(int64(4))), status: receipt.StatusFailed, fenced: true},
		{name: "token above the mark runs", job: run(3, "production", tok(int64(6))), status: receipt.StatusFailed},
		{name: "fence after the run answers its receipt", job: fence(3, jids[3], "production", int64(6)), status: receipt.StatusFailed},
		{name: "run without a token once a mark exists", job: run(4, "configure", nil), status: receipt.StatusFailed, fenced: true},
		{name: "fence a custom request", job: fence(5, jids[5], "custom", int64(7)), status: receipt.StatusFailed, fenced: true},
		{name: "string token", job: run(6, "configure", tok("9")), code: 1, errHas: "invalid fence token"},
		{name: "bool token", job: run(7, "configure", tok(true)), code: 1, errHas: "invalid fence token"},
		{name: "zero token", job: fence(8, jids[8], "configure", int64(0)), code: 1, errHas: "invalid fence token"},
		{name: "token beyond 2^53-1", job: run(8, "configure", tok(int64(1)<<53)), code: 1, errHas: "invalid fence token"},
		{name: "fence under another jid", job: fence(3, jids[9], "production", int64(8)), code: 1, errHas: "binding conflict"},
		{name: "fence under another profile", job: fence(3, jids[3], "configure", int64(8)), code: 1, errHas: "binding conflict"},
		{name: "mark raised by the fences", job: run(9, "configure", tok(int64(8))), status: receipt.StatusFailed, fenced: true},
		{name: "above it again", job: run(8, "configure", tok(int64(9))), status: receipt.StatusSucceeded},
	}
}

func checkFenceStep(t *testing.T, who string, st fenceStep, ret any, code int) receipt.Receipt {
	t.Helper()
	if code != st.code {
		t.Fatalf("%s: %s: code %d, want %d: %v", who, st.name, code, st.code, ret)
	}
	if code != 0 {
		if s, _ := ret.(string); !strings.Contains(s, st.errHas) {
			t.Fatalf("%s: %s: %q does not say %q", who, st.name, s, st.errHas)
		}
		return receipt.Receipt{}
	}
	r, err := receipt.FromValue(ret)
	if err != nil {
		t.Fatalf("%s: %s: not a receipt (%v): %v", who, st.name, err, ret)
	}
	if r.Status != st.status || r.Fenced() != st.fenced {
		t.Fatalf("%s: %s: %+v, want status %s fenced %v", who, st.name, r, st.status, st.fenced)
	}
	if r.Fenced() && (r.Passed != 0 || r.Total != 0) {
		t.Fatalf("%s: %s: fenced with counts %+v", who, st.name, r)
	}
	return r
}

// TestModelFencingMatchesModule runs one script of fence, run and status calls against the Go model and
// against the real oduflow_job module: the same receipts (bindings, statuses, fenced codes) and the same
// refusals.
func TestModelFencingMatchesModule(t *testing.T) {
	h := startHost(t)
	py := h.Handler(minionA)
	m := NewModel(minionA, WithResult(receipt.ProfileConfigure, Result{Status: receipt.StatusSucceeded, Passed: 3, Total: 3}),
		WithResult(receipt.ProfileProduction, Result{Status: receipt.StatusFailed, Passed: 2, Total: 3}))
	ctx := context.Background()
	for _, st := range fencingScript(minionA) {
		pr, pc := py(ctx, st.job)
		mr, mc := m.Handle(ctx, st.job)
		a, b := checkFenceStep(t, "module", st, pr, pc), checkFenceStep(t, "model", st, mr, mc)
		if a != b {
			t.Fatalf("%s: module %+v, model %+v", st.name, a, b)
		}
		if pc == 0 && !reflect.DeepEqual(pr, mr) {
			t.Fatalf("%s: module returned %#v, model %#v", st.name, pr, mr)
		}
	}
	if got := m.FenceMark(); got != 9 {
		t.Fatalf("model mark %d", got)
	}
	lines, _ := h.Marker(minionA)
	if m.Runs() != 2 || len(lines) != 2 {
		t.Fatalf("runs: model %d, module %d (%q)", m.Runs(), len(lines), lines)
	}
	caps, _ := py(ctx, salttest.Job{JID: newJID(), Fun: "oduflow_job.capabilities", MinionID: minionA})
	mcaps, _ := m.Handle(ctx, salttest.Job{JID: newJID(), Fun: "oduflow_job.capabilities", MinionID: minionA})
	want := map[string]any{"version": int64(1), "ready": true, "token_required": false, "mark": int64(9)}
	if got := caps.(map[string]any)["fencing"]; !reflect.DeepEqual(got, want) {
		t.Fatalf("module fencing capability %#v", got)
	}
	if got := mcaps.(map[string]any)["fencing"]; !reflect.DeepEqual(got, want) {
		t.Fatalf("model fencing capability %#v", got)
	}
}

func TestModelCountsConcurrentRuns(t *testing.T) {
	ctx := context.Background()
	m := NewModel("client-"+uuid.NewString(), WithHold())
	run := func(token int64) (any, int) {
		return m.Handle(ctx, salttest.Job{JID: newJID(), Fun: "oduflow_job.run", Args: []any{uuid.NewString(), "configure"},
			Kwargs: map[string]any{"fence_token": token}, MinionID: m.ID()})
	}
	done := make(chan receipt.Receipt)
	go func() {
		ret, _ := run(10)
		r, _ := receipt.FromValue(ret)
		done <- r
	}()
	for m.Runs() == 0 {
		// wait for the held run to start
	}
	if m.FenceMark() != 10 {
		t.Fatalf("mark %d while the run holds", m.FenceMark())
	}
	// A stale publication arriving meanwhile is fenced and never counts as a run.
	ret, _ := run(7)
	if r, err := receipt.FromValue(ret); err != nil || !r.Fenced() {
		t.Fatalf("stale run: %v %v", ret, err)
	}
	if m.MaxConcurrentRuns() != 1 || m.FencedRuns() != 1 {
		t.Fatalf("after a fenced run: max %d fenced %d", m.MaxConcurrentRuns(), m.FencedRuns())
	}
	// A newer one while the first still runs: two runs in flight at once (the execution lock then
	// fails it 0/1), which is exactly what a dispatcher test asserts never happens.
	ret, _ = run(11)
	if r, err := receipt.FromValue(ret); err != nil || r.Status != receipt.StatusFailed || r.Total != 1 || r.Fenced() {
		t.Fatalf("overlapping run: %v %v", ret, err)
	}
	if m.MaxConcurrentRuns() != 2 {
		t.Fatalf("max concurrent %d, want 2", m.MaxConcurrentRuns())
	}
	m.Release()
	if r := <-done; r.Status != receipt.StatusSucceeded {
		t.Fatalf("held run %+v", r)
	}
	if m.Runs() != 1 || m.FenceMark() != 10 {
		t.Fatalf("runs %d mark %d", m.Runs(), m.FenceMark())
	}
}

func TestModelFencingSwitchAndOlderModule(t *testing.T) {
	ctx := context.Background()
	req := func(m *Model, kwargs map[string]any) (any, int) {
		return m.Handle(ctx, salttest.Job{JID: newJID(), Fun: "oduflow_job.run", Args: []any{uuid.NewString(), "configure"},
			Kwargs: kwargs, MinionID: m.ID()})
	}
	strict := NewModel("client-"+uuid.NewString(), WithFenceTokenRequired())
	if ret, code := req(strict, nil); code != 1 || ret != "oduflow_job: a fence token is required" {
		t.Fatalf("no token: %v %d", ret, code)
	}
	if _, code := req(strict, map[string]any{"fence_token": int64(1)}); code != 0 {
		t.Fatal("token refused")
	}
	old := NewModel("client-"+uuid.NewString(), WithoutFencing())
	caps, _ := old.Handle(ctx, salttest.Job{Fun: "oduflow_job.capabilities", MinionID: old.ID()})
	if _, ok := caps.(map[string]any)["fencing"]; ok {
		t.Fatalf("older module advertises fencing: %v", caps)
	}
	if _, code := old.Handle(ctx, salttest.Job{Fun: "oduflow_job.fence", Args: []any{uuid.NewString(), newJID(), "configure", int64(1)},
		MinionID: old.ID()}); code != 254 {
		t.Fatalf("fence on an older module: %d", code)
	}
	if _, code := req(old, map[string]any{"fence_token": int64(1)}); code != 1 {
		t.Fatal("older module accepted a fence token")
	}
	if _, code := req(old, nil); code != 0 {
		t.Fatal("older module refused a run")
	}
}
