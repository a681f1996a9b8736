package service_test

import (
	"encoding/json"
	"github.com/oduflow/oduflow-go/examples/internal/oduflowenv"
	"net/http"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/oduflow/oduflow-go/oduflow"
)

// The custom-state flow over HTTP: validate (422 with code, line and column, never the source), create,
// assign, apply, the same request id again (answered from its execution), an edit (a new revision; the
// frozen execution keeps its own), apply again; and the ping route's readiness.
func TestCustomStateFlow(t *testing.T) {
	t.Parallel()
	env := startSim(t)
	m := env.addMinion()
	s := env.server()
	var v map[string]any
	if code := s.do(t, "POST", "/v1/custom-states/validate", strings.NewReader(`{"source":"x:\n  cmd.run:\n    - name: {{ evil }}\n"}`), &v); code != http.StatusUnprocessableEntity ||
		v["valid"] != false || v["reason"] != "invalid_source" {
		t.Fatalf("invalid source: %d %v", code, v)
	}
	if b, _ := json.Marshal(v); strings.Contains(string(b), "evil") {
		t.Fatalf("the source echoed: %s", b)
	}
	var def struct {
		ID       string `json:"id"`
		Revision int    `json:"revision"`
	}
	if code := s.do(t, "POST", "/v1/custom-states", strings.NewReader(`{"company":"acme","name":"motd","source":`+quote(motd)+`}`), &def); code != http.StatusCreated || def.Revision != 1 {
		t.Fatalf("create: %d %+v", code, def)
	}
	if code := s.do(t, "POST", "/v1/custom-states", strings.NewReader(`{"company":"acme","name":"motd","source":`+quote(motd)+`}`), &v); code != http.StatusConflict || v["reason"] != "exists" {
		t.Fatalf("the same name again: %d %v", code, v)
	}
	apply := "/v1/minions/" + m.ID() + "/custom-states/" + def.ID + "/apply"
	if code := s.do(t, "POST", apply, nil, &v); code != http.StatusConflict || v["reason"] != "not_assigned" {
		t.Fatalf("apply unassigned: %d %v", code, v)
	}
	if code := s.do(t, "PUT", "/v1/minions/"+m.ID()+"/custom-states/"+def.ID, nil, nil); code != http.StatusOK {
		t.Fatalf("assign: %d", code)
	}
	if code := s.do(t, "POST", apply, nil, &v); code != http.StatusConflict || v["reason"] != "initial_configuration_missing" {
		t.Fatalf("apply before configure: %d %v", code, v)
	}
	s.startFinal(t, m.ID())
	id := uuid.NewString()
	var r oduflow.CustomResponse
	if code := s.do(t, "POST", apply, strings.NewReader(`{"request_id":"`+id+`"}`), &r); code != http.StatusCreated || r.ExecutionID != id {
		t.Fatalf("apply: %d %+v", code, r)
	}
	s.waitCustomFinal(t, m.ID(), id)
	runs := m.Calls("oduflow_job.run")
	if code := s.do(t, "POST", apply, strings.NewReader(`{"request_id":"`+id+`"}`), &r); code != http.StatusOK || r.Status != "succeeded" || m.Calls("oduflow_job.run") != runs {
		t.Fatalf("the same request id again: %d %+v (runs %d -> %d)", code, r, runs, m.Calls("oduflow_job.run"))
	}
	// Another request id, same digest: the succeeded execution is reused.
	if code := s.do(t, "POST", apply, strings.NewReader(`{"request_id":"`+uuid.NewString()+`"}`), &r); code != http.StatusOK || r.ExecutionID != oduflowenv.ScopedRequestID(m.ID(), id) || r.Reused == "" {
		t.Fatalf("reuse: %d %+v", code, r)
	}
	if code := s.do(t, "PUT", "/v1/custom-states/"+def.ID+"/source", strings.NewReader(`{"source":`+quote(motd+"# edited\n")+`}`), &def); code != http.StatusOK || def.Revision != 2 {
		t.Fatalf("save: %d %+v", code, def)
	}
	var st struct {
		Execution struct {
			Revision int    `json:"revision"`
			Status   string `json:"status"`
			Passed   int    `json:"passed"`
		} `json:"execution"`
	}
	if code := s.doAs(t, observer, "GET", "/v1/minions/"+m.ID()+"/custom-executions/"+id, nil, &st); code != http.StatusOK || st.Execution.Revision != 1 || st.Execution.Status != "succeeded" {
		t.Fatalf("the frozen execution: %d %+v", code, st)
	}
	again := uuid.NewString()
	if code := s.do(t, "POST", apply, strings.NewReader(`{"request_id":"`+again+`","again":true}`), &r); code != http.StatusCreated || r.ExecutionID != again {
		t.Fatalf("apply again: %d %+v", code, r)
	}
	s.waitCustomFinal(t, m.ID(), again)

	var ping map[string]any
	if code := s.doAs(t, observer, "GET", "/v1/minions/"+m.ID()+"/ping", nil, &ping); code != http.StatusOK || ping["ready"] != true || ping["reachable"] != true {
		t.Fatalf("ping: %d %v", code, ping)
	}
	if _, ok := ping["runtime_guard_error"]; !ok {
		t.Fatalf("ping without runtime_guard_error: %v", ping)
	}
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
