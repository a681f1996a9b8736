package service_test

import (
	"context"
	"github.com/oduflow/oduflow-go/examples/internal/oduflowenv"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/oduflow/oduflow-go/examples/controller/internal/service"
	"github.com/oduflow/oduflow-go/oduflow"
	"github.com/oduflow/oduflow-go/oduflow/oduflowtest/fakeminion"
	"github.com/oduflow/oduflow-go/receipt"
)

// apiError is the JSON error body.
type apiError struct {
	Error      string `json:"error"`
	Code       string `json:"code"`
	ExitStatus int    `json:"exit_status"`
	Reason     string `json:"reason"`
}

func TestStartStatusUnresolvedAndMetrics(t *testing.T) {
	t.Parallel()
	env := startSim(t)
	m := env.addMinion()
	s := env.server()

	var r oduflow.Response
	if code := s.do(t, "POST", "/v1/requests/configure/"+m.ID(), nil, &r); code != http.StatusCreated {
		t.Fatalf("new start: %d %+v", code, r)
	}
	if receipt.ValidateRequestID(r.RequestID) != nil || r.MinionID != m.ID() {
		t.Fatalf("a new request id is generated: %+v", r)
	}
	final := s.waitFinal(t, m.ID(), r.RequestID)
	if final.Status != receipt.StatusSucceeded || final.Passed != 3 || final.Total != 3 || final.ErrorCode != "" {
		t.Fatalf("final: %+v", final)
	}
	// The same request id again: answered from its claim, 200, never published again.
	var again oduflow.Response
	body := strings.NewReader(`{"request_id": "` + r.RequestID + `"}`)
	if code := s.do(t, "POST", "/v1/requests/configure/"+m.ID(), body, &again); code != http.StatusOK || again.Status != receipt.StatusSucceeded {
		t.Fatalf("repeated start: %d %+v", code, again)
	}
	if n := m.Runs(); n != 1 {
		t.Fatalf("runs on the minion: %d, want 1", n)
	}
	// A chosen request id is used as is.
	chosen := uuid.NewString()
	var c oduflow.Response
	if code := s.do(t, "POST", "/v1/requests/configure/"+m.ID(), strings.NewReader(`{"request_id":"`+chosen+`"}`), &c); code != http.StatusCreated || c.RequestID != chosen {
		t.Fatalf("chosen id: %d %+v", code, c)
	}
	s.waitFinal(t, m.ID(), chosen)

	var un struct {
		Unresolved []map[string]any `json:"unresolved"`
	}
	if code := s.do(t, "GET", "/v1/unresolved", nil, &un); code != http.StatusOK || un.Unresolved == nil || len(un.Unresolved) != 0 {
		t.Fatalf("unresolved: %d %+v", code, un)
	}
	var health map[string]string
	if code := s.do(t, "GET", "/healthz", nil, &health); code != http.StatusOK || health["status"] != "ok" {
		t.Fatalf("healthz: %d %v", code, health)
	}
	if code := s.do(t, "GET", "/readyz", nil, &health); code != http.StatusOK || health["status"] != "ready" {
		t.Fatalf("readyz: %d %v", code, health)
	}
	// The outcome hook runs on the worker just after the final commit a status read sees: once the
	// workers have ended it has been counted.
	s.waitWorkers(t)
	metrics := get(t, s, "/metrics")
	for _, want := range []string{`oduflow_starts_total{created="true",profile="configure"} 2`,
		`oduflow_starts_total{created="false",profile="configure"} 1`,
		`oduflow_outcomes_total{error_code="",profile="configure",status="succeeded"} 2`,
		`oduflow_publications_total{function="oduflow_job.run",result="ok"} 2`} {
		if !strings.Contains(metrics, want) {
			t.Errorf("metrics lack %q:\n%s", want, metrics)
		}
	}
}

// A request still running is listed by GET /v1/unresolved until it ends.
func TestUnresolvedListsARunningRequest(t *testing.T) {
	t.Parallel()
	env := startSim(t)
	m := env.addMinion(fakeminion.WithHold())
	s := env.server()
	var r oduflow.Response
	if code := s.do(t, "POST", "/v1/requests/configure/"+m.ID(), nil, &r); code != http.StatusCreated {
		t.Fatalf("start: %d", code)
	}
	var un struct {
		Unresolved []struct {
			MinionID     string `json:"minion_id"`
			RequestID    string `json:"request_id"`
			Status       string `json:"status"`
			Quarantining bool   `json:"quarantining"`
		} `json:"unresolved"`
	}
	if code := s.do(t, "GET", "/v1/unresolved", nil, &un); code != http.StatusOK || len(un.Unresolved) != 1 ||
		un.Unresolved[0].RequestID != oduflowenv.ScopedRequestID(m.ID(), r.RequestID) || un.Unresolved[0].MinionID != m.ID() || un.Unresolved[0].Status != "running" || un.Unresolved[0].Quarantining {
		t.Fatalf("unresolved: %d %+v", code, un)
	}
	m.Release()
	s.waitFinal(t, m.ID(), r.RequestID)
	if code := s.do(t, "GET", "/v1/unresolved", nil, &un); code != http.StatusOK || len(un.Unresolved) != 0 {
		t.Fatalf("unresolved after the end: %d %+v", code, un)
	}
}

func TestBadInputIsTyped4xxWithNothingWritten(t *testing.T) {
	t.Parallel()
	env := startSim(t)
	m := env.addMinion()
	s := env.server()
	good := m.ID()
	req := uuid.NewString()
	for _, tc := range []struct {
		name, method, path, body string
		status                   int
		reason, msg              string
	}{
		{"bad minion id", "POST", "/v1/requests/configure/nope", "", 400, "invalid_input", `start: invalid minion id "nope": want client-<canonical lowercase UUID>`},
		{"upper-case minion id", "POST", "/v1/requests/configure/" + strings.ToUpper(good), "", 400, "invalid_input", "want client-<canonical lowercase UUID>"},
		{"unknown profile", "POST", "/v1/requests/deploy/" + good, "", 400, "invalid_input", `start: unknown profile "deploy": want configure, production, volume_resize or credentials`},
		{"custom profile", "POST", "/v1/requests/custom/" + good, "", 400, "invalid_input", "profile custom"},
		{"malformed JSON", "POST", "/v1/requests/configure/" + good, `{"request_id":`, 400, "invalid_input", "start: malformed JSON body"},
		{"unknown field", "POST", "/v1/requests/configure/" + good, `{"request_id":"` + req + `","x":1}`, 400, "invalid_input", "unknown field"},
		{"two values", "POST", "/v1/requests/configure/" + good, `{} {}`, 400, "invalid_input", "more than one value"},
		{"not an object", "POST", "/v1/requests/configure/" + good, `"` + req + `"`, 400, "invalid_input", "malformed JSON body"},
		{"bad request id", "POST", "/v1/requests/configure/" + good, `{"request_id":"R1"}`, 400, "invalid_input", `start: invalid request id "R1": want a canonical lowercase UUID`},
		{"oversized body", "POST", "/v1/requests/configure/" + good, `{"request_id":"` + strings.Repeat(" ", 5000) + `"}`, 413, "body_too_large", "body over 4096 bytes"},
		{"status: bad request id", "GET", "/v1/requests/configure/" + good + "/x", "", 400, "invalid_input", `status: invalid request id "x"`},
		{"status: unknown profile", "GET", "/v1/requests/nope/" + good + "/" + req, "", 400, "invalid_input", "unknown profile"},
		{"resume: bad minion", "POST", "/v1/requests/m/" + req + "/resume", "", 400, "invalid_input", `resume: invalid minion id "m"`},
		{"resume: no claim", "POST", "/v1/requests/" + good + "/" + req + "/resume", "", 404, "no_claim", ""},
		{"no route", "GET", "/v1/nothing", "", 404, "no_route", "no route for GET /v1/nothing"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var e apiError
			code := s.do(t, tc.method, tc.path, strings.NewReader(tc.body), &e)
			if code != tc.status || e.Reason != tc.reason || !strings.Contains(e.Error, tc.msg) || e.Code != "usage" || e.ExitStatus != 2 {
				t.Fatalf("%d %+v, want %d %s with %q (usage, 2)", code, e, tc.status, tc.reason, tc.msg)
			}
		})
	}
	assertNoClaims(t, env.claims)
	if m.Calls("oduflow_job.run") != 0 {
		t.Fatal("a refused request published a run")
	}
	// Every refusal is one log line.
	for _, line := range strings.Split(strings.TrimSpace(s.logs.String()), "\n") {
		if !strings.Contains(line, `msg="request refused"`) {
			t.Errorf("unexpected log line: %s", line)
		}
	}
}

// A master that does not answer: a new start is 503 not_ready (exit status 3, nothing written), readyz is
// 503; a request that has a claim still answers.
func TestNotReadyIs503WithNothingWritten(t *testing.T) {
	t.Parallel()
	env := startSim(t)
	m := env.addMinion()
	// A master's proof lasts a millisecond (Timers.MasterProof) instead of 3 s: no wait for it to expire.
	tm := testTimers()
	tm.MasterProof = time.Millisecond
	s := env.serverTimed(tm)
	done := s.startFinal(t, m.ID())
	s.waitWorkers(t)
	before := claimNames(t, env.claims)
	if err := env.sim.Close(); err != nil {
		t.Fatal(err)
	}

	var e apiError
	if code := s.do(t, "POST", "/v1/requests/configure/"+m.ID(), nil, &e); code != http.StatusServiceUnavailable ||
		e.Reason != "not_ready" || e.Code != "unreachable" || e.ExitStatus != 3 || !strings.Contains(e.Error, "nothing written") {
		t.Fatalf("start with the master down: %d %+v", code, e)
	}
	if after := claimNames(t, env.claims); !maps.Equal(after, before) {
		t.Fatalf("claim records %v -> %v: a refused start wrote or removed something", before, after)
	}
	if code := s.do(t, "GET", "/readyz", nil, &e); code != http.StatusServiceUnavailable || e.Reason != "not_ready" {
		t.Fatalf("readyz with the master down: %d %+v", code, e)
	}
	var again oduflow.Response
	if code := s.do(t, "POST", "/v1/requests/configure/"+m.ID(), strings.NewReader(`{"request_id":"`+done.RequestID+`"}`), &again); code != http.StatusOK ||
		again.Status != receipt.StatusSucceeded {
		t.Fatalf("a repeated start answers from its claim: %d %+v", code, again)
	}
}

// Close drains: readyz and a new start answer 503 closed at once; status still answers.
func TestCloseRefusesNewRequests(t *testing.T) {
	t.Parallel()
	env := startSim(t)
	m := env.addMinion()
	s := env.server()
	done := s.startFinal(t, m.ID())
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.svc.Close(ctx); err != nil {
		t.Fatal(err)
	}
	var e apiError
	if code := s.do(t, "GET", "/readyz", nil, &e); code != http.StatusServiceUnavailable || e.Reason != "closed" {
		t.Fatalf("readyz while closed: %d %+v", code, e)
	}
	if code := s.do(t, "POST", "/v1/requests/configure/"+m.ID(), nil, &e); code != http.StatusServiceUnavailable ||
		e.Reason != "closed" || e.ExitStatus != 3 {
		t.Fatalf("start while closed: %d %+v", code, e)
	}
	var r oduflow.Response
	if code := s.do(t, "GET", "/v1/requests/configure/"+m.ID()+"/"+done.RequestID, nil, &r); code != http.StatusOK || r.Status != receipt.StatusSucceeded {
		t.Fatalf("status while closed: %d %+v", code, r)
	}
	// Resume of a request that is not unknown: 409.
	if code := s.do(t, "POST", "/v1/requests/"+m.ID()+"/"+done.RequestID+"/resume", nil, &e); code != http.StatusConflict && code != http.StatusServiceUnavailable {
		t.Fatalf("resume of a succeeded request: %d %+v", code, e)
	}
}

func get(t *testing.T, s *server, path string) string {
	t.Helper()
	resp, err := s.http.Client().Do(s.request(t, observer, "GET", path, nil))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %v", path, resp.StatusCode, err)
	}
	return string(b)
}

// claimFiles counts the files in the claim directory (0 when it does not exist).
func claimFiles(t *testing.T, dir string) int {
	t.Helper()
	return len(claimNames(t, dir))
}

// claimNames lists the records under the claim directory, leaving out the store's in-flight temporary
// files (".tmp-…", renamed over a record or removed by the writer a moment later).
func claimNames(t *testing.T, dir string) map[string]bool {
	t.Helper()
	names := map[string]bool{}
	err := walk(dir, func(path string) {
		if !strings.HasPrefix(filepath.Base(path), ".tmp-") {
			names[path] = true
		}
	})
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return names
}

func assertNoClaims(t *testing.T, dir string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.Contains(e.Name(), "claim") || strings.HasSuffix(e.Name(), ".json") {
			t.Fatalf("a refused request wrote %s", e.Name())
		}
	}
	if n := claimFiles(t, dir); n > 2 {
		t.Fatalf("%d files in the claim store after refusals only", n)
	}
}

// 200 concurrent POSTs of one request id by one administrator: exactly one created the claim (201), the others answer from it
// (200), one run on the minion. The same id for another minion is another request (ids are scoped by
// their client); under another profile on the same client it is 409 mismatch.
func TestConcurrentStartsOneCreated(t *testing.T) {
	t.Parallel()
	env := startSim(t)
	m := env.addMinion()
	other := env.addMinion()
	s := env.server(func(c *service.Config) { c.Auth.MaxInflight = 1000 })
	id := uuid.NewString()
	const n = 200
	codes := make(chan int, n)
	for range n {
		go func() {
			req, err := http.NewRequest("POST", s.http.URL+"/v1/requests/configure/"+m.ID(), strings.NewReader(`{"request_id":"`+id+`"}`))
			if err != nil {
				codes <- 0
				return
			}
			req.Header.Set("Authorization", "Bearer "+s.tokens[admin])
			resp, err := s.http.Client().Do(req)
			if err != nil {
				codes <- 0
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			codes <- resp.StatusCode
		}()
	}
	count := map[int]int{}
	for range n {
		count[<-codes]++
	}
	if count[http.StatusCreated] != 1 || count[http.StatusOK] != n-1 {
		t.Fatalf("answers %v, want one 201 and %d 200", count, n-1)
	}
	s.waitFinal(t, m.ID(), id)
	if runs := m.Runs(); runs != 1 {
		t.Fatalf("runs %d, want 1", runs)
	}
	var e apiError
	var o oduflow.Response
	if code := s.do(t, "POST", "/v1/requests/configure/"+other.ID(), strings.NewReader(`{"request_id":"`+id+`"}`), &o); code != http.StatusCreated || o.RequestID != id || o.MinionID != other.ID() {
		t.Fatalf("the id for another minion: %d %+v, want 201 (another request)", code, o)
	}
	if code := s.do(t, "GET", "/v1/requests/production/"+m.ID()+"/"+id, nil, &e); code != http.StatusConflict || e.Reason != "mismatch" {
		t.Fatalf("status under another profile: %d %+v, want 409 mismatch", code, e)
	}
}
