package service_test

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/oduflow/oduflow-go/examples/controller/internal/service"
	"github.com/oduflow/oduflow-go/oduflow/oduflowtest/fakeminion"
	"github.com/oduflow/oduflow-go/profiles"
	"github.com/oduflow/oduflow-go/receipt"
)

// The controller with ODUFLOW_PROFILES on a host-named fleet: the table's profile runs on a host-named
// client bound in ODUFLOW_CLIENTS; a profile outside the table and an id outside the policy are 400 with
// nothing written; a bad table keeps the service from starting.
func TestControllerFleetTable(t *testing.T) {
	t.Parallel()
	doc := "profiles:\n  webserver: {sls: [roles.webserver, roles.monitoring]}\n  full: {highstate: true}\nminion_ids: salt\n"
	path := filepath.Join(t.TempDir(), "profiles.yaml")
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	tb, err := profiles.LoadTable(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	env := startSim(t)
	m := env.AddMinionNamed("web01.prod.example.com", fakeminion.WithProfileTable(tb),
		fakeminion.WithResult("webserver", fakeminion.Result{Status: receipt.StatusSucceeded, Passed: 4, Total: 4}))
	env.minions = append(env.minions, m.ID())
	s := env.server(func(c *service.Config) { c.Settings.Profiles = path })
	var r struct {
		RequestID string `json:"request_id"`
		Status    string `json:"status"`
	}
	if code := s.do(t, "POST", "/v1/requests/webserver/"+m.ID(), nil, &r); code != http.StatusCreated {
		t.Fatalf("start: %d", code)
	}
	// The request's event stream, on a profile of the operator's table.
	if got := s.waitFinalOf(t, "webserver", m.ID(), r.RequestID); got.Status != receipt.StatusSucceeded || got.Passed != 4 {
		t.Fatalf("%+v", got)
	}
	for _, tc := range []struct{ path, msg string }{
		{"/v1/requests/configure/" + m.ID(), `unknown profile "configure": want one of full, webserver`},
		{"/v1/requests/webserver/web%2A", "want a Salt minion id"},
	} {
		var e apiError
		if code := s.do(t, "POST", tc.path, nil, &e); code != http.StatusBadRequest || !strings.Contains(e.Error, tc.msg) {
			t.Fatalf("%s: %d %+v", tc.path, code, e)
		}
	}
	if m.Calls("oduflow_job.run") != 1 {
		t.Fatalf("runs %d", m.Calls("oduflow_job.run"))
	}
	if err := os.WriteFile(path, []byte("profiles:\n  custom: {highstate: true}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, _ := env.serverConfig()
	cfg.Settings.Profiles = path
	if _, err := service.Open(t.Context(), cfg); err == nil || !strings.Contains(err.Error(), path+":2: profiles.custom") {
		t.Fatalf("bad table: %v", err)
	}
}
