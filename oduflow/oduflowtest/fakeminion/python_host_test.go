package fakeminion

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/oduflow/oduflow-go/internal/testwait"
	"github.com/oduflow/oduflow-go/receipt"
	"github.com/oduflow/oduflow-go/salt/salttest"
)

const (
	minionA = "client-5b2f8c1e-3c4d-4e5f-8a9b-0c1d2e3f4a5b"
	minionB = "client-00000000-0000-4000-8000-000000000000"
)

func startHost(t *testing.T, opts ...PythonOption) *PythonHost {
	t.Helper()
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 not installed")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	h, err := StartPython(ctx, t.TempDir(), append(opts, legacyUnfenced)...)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { _ = h.Close() })
	return h
}

// legacyUnfenced sets the module's legacy mode (minion option oduflow_allow_unfenced_runs) unless the
// test set it: these tests call oduflow_job.run without a fence token, as the dispatchers before fencing
// did, and the module refuses that by default.
func legacyUnfenced(c *config) {
	if _, set := c.host.MinionOpts["oduflow_allow_unfenced_runs"]; set {
		return
	}
	opts := map[string]any{"oduflow_allow_unfenced_runs": true}
	for k, v := range c.host.MinionOpts {
		opts[k] = v
	}
	c.host.MinionOpts = opts
}

func call(t *testing.T, h *PythonHost, minion, fun string, args []any, jid string) (any, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ret, code, err := h.callModule(ctx, minion, fun, args, nil, jid)
	if err != nil {
		t.Fatalf("Call %s: %v", fun, err)
	}
	return ret, code
}

func mustReceipt(t *testing.T, ret any, b receipt.Binding, status receipt.Status, passed, total int) receipt.Receipt {
	t.Helper()
	r, err := receipt.FromValue(ret)
	if err != nil {
		t.Fatalf("not a receipt (%v): %#v", err, ret)
	}
	if r.MinionID != b.MinionID || r.RequestID != b.RequestID || r.JID != b.JID || r.Profile != b.Profile {
		t.Fatalf("binding: got %+v want %+v", r, b)
	}
	if r.Status != status || r.Passed != passed || r.Total != total {
		t.Fatalf("got %s %d/%d, want %s %d/%d", r.Status, r.Passed, r.Total, status, passed, total)
	}
	if status.Terminal() {
		if err := b.Check(r); err != nil {
			t.Fatalf("Check: %v", err)
		}
	}
	return r
}

var jidSeq struct {
	sync.Mutex
	last int64
}

// newJID returns unique 20-digit JIDs (UTC time, microseconds bumped to stay unique).
func newJID() string {
	jidSeq.Lock()
	defer jidSeq.Unlock()
	now := time.Now().UTC()
	n := int64(now.Nanosecond() / 1000)
	if n <= jidSeq.last {
		n = jidSeq.last + 1
	}
	jidSeq.last = n
	return now.Format("20060102150405") + fmt.Sprintf("%06d", n%1000000)
}

func TestRunStatusRoundTrip(t *testing.T) {
	h := startHost(t)
	caps, code := call(t, h, minionA, "oduflow_job.capabilities", nil, newJID())
	m, ok := caps.(map[string]any)
	if code != 0 || !ok || m["protocol"] != int64(1) || m["runtime_guard"] != true || m["pillar_ready"] != true {
		t.Fatalf("capabilities: %d %#v", code, caps)
	}
	if m["module_sha256"] != receipt.MinionModule().SHA256 {
		t.Fatalf("module_sha256 %v", m["module_sha256"])
	}

	req, jid := receipt.NewRequestID(), newJID()
	b := receipt.Binding{MinionID: minionA, RequestID: req, JID: jid, Profile: receipt.ProfileConfigure}
	ret, code := call(t, h, minionA, "oduflow_job.run", []any{req, "configure"}, jid)
	if code != 0 {
		t.Fatalf("run retcode %d: %v", code, ret)
	}
	first := mustReceipt(t, ret, b, receipt.StatusSucceeded, 3, 3)
	ret, _ = call(t, h, minionA, "oduflow_job.status", []any{req, jid, "configure"}, newJID())
	if got := mustReceipt(t, ret, b, receipt.StatusSucceeded, 3, 3); got != first {
		t.Fatalf("status %+v != run %+v", got, first)
	}
	// the same publication again does not execute again
	ret, _ = call(t, h, minionA, "oduflow_job.run", []any{req, "configure"}, jid)
	mustReceipt(t, ret, b, receipt.StatusSucceeded, 3, 3)
	if lines, _ := h.Marker(minionA); len(lines) != 1 || !strings.HasPrefix(lines[0], jid+" state.apply roles.client_stack ") {
		t.Fatalf("marker %q", lines)
	}

	// production fails 2/3; its receipt file is the canonical receipt
	req2, jid2 := receipt.NewRequestID(), newJID()
	b2 := receipt.Binding{MinionID: minionA, RequestID: req2, JID: jid2, Profile: receipt.ProfileProduction}
	ret, _ = call(t, h, minionA, "oduflow_job.run", []any{req2, "production"}, jid2)
	r2 := mustReceipt(t, ret, b2, receipt.StatusFailed, 2, 3)
	data, err := os.ReadFile(filepath.Join(h.MinionDir(minionA), "receipts", "req-"+req2+".json"))
	if err != nil {
		t.Fatal(err)
	}
	want, _ := r2.Encode()
	if string(data) != string(want) {
		t.Fatalf("stored %s, want %s", data, want)
	}
	fi, err := os.Stat(filepath.Join(h.MinionDir(minionA), "receipts"))
	if err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("receipt dir mode %v %v", fi.Mode(), err)
	}

	// no evidence: not_started; unknown request of another minion: not_started there
	req3, jid3 := receipt.NewRequestID(), newJID()
	ret, _ = call(t, h, minionB, "oduflow_job.status", []any{req3, jid3, "configure"}, newJID())
	mustReceipt(t, ret, receipt.Binding{MinionID: minionB, RequestID: req3, JID: jid3, Profile: receipt.ProfileConfigure},
		receipt.StatusNotStarted, 0, 0)
}

func TestRefusals(t *testing.T) {
	h := startHost(t)
	req := receipt.NewRequestID()
	for _, tc := range []struct {
		name   string
		minion string
		args   []any
		want   string
	}{
		{"caller option", minionA, []any{req, "configure", map[string]any{"__kwarg__": true, "test": true}}, "caller execution options"},
		{"option string", minionA, []any{req, "configure", "queue=True"}, "caller execution options"},
		{"bad profile", minionA, []any{req, "highstate"}, "unknown profile"},
		{"bad minion", "minion-1", []any{req, "configure"}, "outside the id policy"},
		{"custom digest", minionA, []any{req, "custom", `{"digest":"` + strings.Repeat("0", 64) + `","high":{"a":{"test":["nop"]}}}`}, "digest mismatch"},
	} {
		ret, code := call(t, h, tc.minion, "oduflow_job.run", tc.args, newJID())
		s, _ := ret.(string)
		if code == 0 || !strings.Contains(s, tc.want) {
			t.Errorf("%s: %d %v", tc.name, code, ret)
		}
	}
	if lines, _ := h.Marker(minionA); len(lines) != 0 {
		t.Fatalf("executed: %q", lines)
	}
}

func TestCustomPayload(t *testing.T) {
	h := startHost(t)
	high := map[string]any{"custom_ok": map[string]any{"test": []any{"succeed_without_changes", map[string]any{"name": "ok"}}}}
	highJSON, err := receipt.CanonicalJSON(high)
	if err != nil {
		t.Fatal(err)
	}
	digest := receipt.Digest(highJSON)
	payload, _ := json.Marshal(map[string]any{"digest": digest, "high": high})
	req, jid := receipt.NewRequestID(), newJID()
	ret, _ := call(t, h, minionA, "oduflow_job.run", []any{req, "custom", string(payload)}, jid)
	mustReceipt(t, ret, receipt.Binding{MinionID: minionA, RequestID: req, JID: jid, Profile: receipt.ProfileCustom, StateDigest: digest},
		receipt.StatusSucceeded, 1, 1)
}

func TestDuplicateWorkersExecuteOnce(t *testing.T) {
	h := startHost(t, WithPythonConfig(PythonConfig{Delays: map[string]time.Duration{"roles.client_stack": 300 * time.Millisecond}}))
	req, jid := receipt.NewRequestID(), newJID()
	var wg sync.WaitGroup
	rets := make([]any, 6)
	for i := range rets {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ret, _, err := h.callModule(context.Background(), minionA, "oduflow_job.run", []any{req, "configure"}, nil, jid)
			if err != nil {
				t.Error(err)
			}
			rets[i] = ret
		}()
	}
	wg.Wait()
	for _, ret := range rets {
		r, err := receipt.FromValue(ret)
		if err != nil || (r.Status != receipt.StatusRunning && r.Status != receipt.StatusSucceeded) {
			t.Fatalf("run: %v %#v", err, ret)
		}
	}
	if lines, _ := h.Marker(minionA); len(lines) != 1 {
		t.Fatalf("executions: %q", lines)
	}
}

func TestCancelKillsJobAndLeavesUnknown(t *testing.T) {
	h := startHost(t, WithPythonConfig(PythonConfig{Delays: map[string]time.Duration{"roles.client_stack": 20 * time.Second}}))
	req, jid := receipt.NewRequestID(), newJID()
	b := receipt.Binding{MinionID: minionA, RequestID: req, JID: jid, Profile: receipt.ProfileConfigure}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, _, err := h.callModule(ctx, minionA, "oduflow_job.run", []any{req, "configure"}, nil, jid)
		errc <- err
	}()
	// the Python minion's state is read through its own status function: nothing announces it
	testwait.Until(t, "never running inside the state function", 10*time.Second, func() bool {
		ret, _ := call(t, h, minionA, "oduflow_job.status", []any{req, jid, "configure"}, newJID())
		lines, _ := h.Marker(minionA)
		r, err := receipt.FromValue(ret)
		return err == nil && r.Status == receipt.StatusRunning && len(lines) == 1
	})
	cancel()
	if err := <-errc; err == nil {
		t.Fatal("cancelled call returned no error")
	}
	testwait.Until(t, "not unknown after the kill", 10*time.Second, func() bool {
		ret, _ := call(t, h, minionA, "oduflow_job.status", []any{req, jid, "configure"}, newJID())
		r, err := receipt.FromValue(ret)
		return err == nil && r.Status == receipt.StatusUnknown
	})
	ret, _ := call(t, h, minionA, "oduflow_job.run", []any{req, "configure"}, jid)
	mustReceipt(t, ret, b, receipt.StatusUnknown, 0, 0)
	if lines, _ := h.Marker(minionA); len(lines) != 1 {
		t.Fatalf("executions: %q", lines)
	}
}

func TestHandlerAdapter(t *testing.T) {
	h := startHost(t)
	handle := h.Handler(minionA)
	ctx := context.Background()
	if ret, code := handle(ctx, salttest.Job{Fun: "test.ping", MinionID: minionA}); ret != true || code != 0 {
		t.Fatalf("ping: %v %d", ret, code)
	}
	if _, code := handle(ctx, salttest.Job{Fun: "cmd.run", MinionID: minionA}); code != 254 {
		t.Fatalf("cmd.run: %d", code)
	}
	req, jid := receipt.NewRequestID(), newJID()
	ret, code := handle(ctx, salttest.Job{JID: jid, Fun: "oduflow_job.run", Args: []any{req, "production"}, MinionID: minionA})
	if code != 0 {
		t.Fatalf("run: %d %v", code, ret)
	}
	mustReceipt(t, ret, receipt.Binding{MinionID: minionA, RequestID: req, JID: jid, Profile: receipt.ProfileProduction},
		receipt.StatusFailed, 2, 3)
	// a caller kwarg travels as a kwarg and is refused
	ret, code = handle(ctx, salttest.Job{JID: newJID(), Fun: "oduflow_job.run", Args: []any{receipt.NewRequestID(), "configure"},
		Kwargs: map[string]any{"test": true}, MinionID: minionA})
	if s, _ := ret.(string); code == 0 || !strings.Contains(s, "caller execution options") {
		t.Fatalf("kwarg: %d %v", code, ret)
	}
}

func TestUnverifiedSaltRefuses(t *testing.T) {
	h := startHost(t, WithPythonConfig(PythonConfig{SaltVersion: "3005.1"}))
	ret, code := call(t, h, minionA, "oduflow_job.run", []any{receipt.NewRequestID(), "configure"}, newJID())
	if s, _ := ret.(string); code == 0 || !strings.Contains(s, "salt_version: Salt 3005.1 is older than 3006.0") {
		t.Fatalf("%d %v", code, ret)
	}
	caps, _ := call(t, h, minionA, "oduflow_job.capabilities", nil, newJID())
	if caps.(map[string]any)["runtime_guard"] != false {
		t.Fatalf("%v", caps)
	}
}

func TestClose(t *testing.T) {
	h := startHost(t)
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := h.callModule(context.Background(), minionA, "oduflow_job.capabilities", nil, nil, ""); err == nil {
		t.Fatal("call after Close succeeded")
	}
}

// The real module on each Salt line's shape of State.call_parallel (the Python host's fake salt.state
// follows SaltVersion): the guard holds, capabilities name the form found, and a run succeeds. Released
// Salt since 3006.10/3007.2 (and the 3008 line) takes inject_globals; a module that knew only the older
// form refused every run there.
func TestGuardHoldsOnEverySaltLine(t *testing.T) {
	for version, form := range map[string]string{
		"3006.0":  "3006.0-3006.9, 3007.0-3007.1",
		"3006.9":  "3006.0-3006.9, 3007.0-3007.1",
		"3006.16": "3006.10+, 3007.2+, 3008",
		"3007.1":  "3006.0-3006.9, 3007.0-3007.1",
		"3007.8":  "3006.10+, 3007.2+, 3008",
		"3008.0":  "3006.10+, 3007.2+, 3008",
	} {
		t.Run(version, func(t *testing.T) {
			h := startHost(t, WithPythonConfig(PythonConfig{SaltVersion: version}))
			caps, _ := call(t, h, minionA, "oduflow_job.capabilities", nil, newJID())
			m, _ := caps.(map[string]any)
			forms, _ := m["runtime_guard_forms"].(map[string]any)
			if m["runtime_guard"] != true || forms["salt.state.State.call_parallel"] != form {
				t.Fatalf("capabilities %v", caps)
			}
			req, jid := receipt.NewRequestID(), newJID()
			ret, code := call(t, h, minionA, "oduflow_job.run", []any{req, "configure"}, jid)
			if code != 0 {
				t.Fatalf("run: %d %v", code, ret)
			}
			mustReceipt(t, ret, receipt.Binding{MinionID: minionA, RequestID: req, JID: jid, Profile: receipt.ProfileConfigure},
				receipt.StatusSucceeded, 3, 3)
		})
	}
}
