package service_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
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
	"github.com/oduflow/oduflow-go/receipt"
)

const motd = "motd:\n  file.managed:\n    - name: /etc/motd\n    - contents: hello\n"

// callers is the order of a route's expected codes.
var callers = []string{nobody, observer, otherObserver, otherAdmin, admin}

// callerRole is what the route table's declarations are about: whether a caller is authenticated, an
// administrator, and of the company of the routes' targets (acme).
var callerRole = map[string]struct{ authenticated, admin, acme bool }{
	nobody: {}, observer: {true, false, true}, otherObserver: {true, false, false},
	otherAdmin: {true, true, false}, admin: {true, true, true},
}

// routeFixture is how the test calls one route of the table: the path (targets of acme's client m, its
// definition, its requests), the body (made again for each call) and the status of an authorized call.
type routeFixture struct {
	path string
	body func() string
	ok   int
}

func jsonBody(v any) func() string {
	return func() string {
		b, _ := json.Marshal(v)
		return string(b)
	}
}

// expected is the status the declaration d implies for caller who, given the status of an authorized
// call: 401 without a principal, 403 for the role (an administrator's route), 403 for a target outside
// the caller's companies (a client, a definition, a body's company), else ok.
func expected(d service.RouteDecl, who string, ok int) int {
	c := callerRole[who]
	switch {
	case !c.authenticated:
		return http.StatusUnauthorized
	case d.Admin && !c.admin:
		return http.StatusForbidden
	case (d.Minion || d.Definition || d.BodyCompany) && !c.acme:
		return http.StatusForbidden
	}
	return ok
}

// TestRouteDeclarations: every route of the table declares what its method and path imply: a write
// (any method but GET) is an administrator's and mutating (validate alone is an administrator's read:
// it compiles, never writes), a GET never mutates; a {minion} in the path is scopeMinion and an {id}
// scopeDefinition, both ways; a write with no target in its path names its company in the body. A route
// added without its declaration, or with a wrong one, fails here.
func TestRouteDeclarations(t *testing.T) {
	t.Parallel()
	env := startSim(t)
	readsOnly := map[string]bool{"custom_validate": true}
	for _, d := range service.Routes(env.server().svc) {
		write := d.Method != "GET" && d.Method != ""
		if write && (!d.Admin || d.Mutating == readsOnly[d.Action]) {
			t.Errorf("%s (%s): a write must be an administrator's and mutating (admin %v, mutating %v)", d.Pattern, d.Action, d.Admin, d.Mutating)
		}
		if !write && d.Mutating {
			t.Errorf("%s (%s): declared mutating, but it is a read", d.Pattern, d.Action)
		}
		if strings.Contains(d.Pattern, "{minion}") != d.Minion || strings.Contains(d.Pattern, "{id}") != d.Definition {
			t.Errorf("%s (%s): the path's targets and the declared scope differ (minion %v, definition %v)", d.Pattern, d.Action, d.Minion, d.Definition)
		}
		if write && d.Mutating && !d.Minion && !d.Definition && !d.BodyCompany {
			t.Errorf("%s (%s): a write with no target checked against the caller's companies", d.Pattern, d.Action)
		}
	}
}

// Every route of the route table (service.Routes: the table itself) × {no principal, observer of the
// company, observer of another company, administrator of another company, administrator of the company}:
// the status the route's declaration implies (expected), and that a refusal (401, 403, 409
// unbound_client) wrote nothing (the claim store and the catalog, byte for byte) and published nothing.
// A route of the table without a fixture here fails, so no route escapes the walk.
func TestEveryRouteByEveryCaller(t *testing.T) {
	t.Parallel()
	env := startSim(t)
	m := env.addMinion()
	unbound := env.AddMinion() // not bound to a company (added around addMinion)
	s := env.server()

	// The state the routes read: a succeeded configure, a definition assigned to m, an execution.
	done := s.startFinal(t, m.ID())
	var def struct {
		ID string `json:"id"`
	}
	if code := s.do(t, "POST", "/v1/custom-states", strings.NewReader(jsonBody(map[string]string{"company": "acme", "name": "motd", "source": motd})()), &def); code != http.StatusCreated {
		t.Fatalf("create: %d", code)
	}
	if code := s.do(t, "PUT", "/v1/minions/"+m.ID()+"/custom-states/"+def.ID, nil, nil); code != http.StatusOK {
		t.Fatalf("assign: %d", code)
	}
	exec := uuid.NewString()
	var applied oduflow.CustomResponse
	if code := s.do(t, "POST", "/v1/minions/"+m.ID()+"/custom-states/"+def.ID+"/apply", strings.NewReader(`{"request_id":"`+exec+`"}`), &applied); code != http.StatusCreated && code != http.StatusOK {
		t.Fatalf("apply: %d %+v", code, applied)
	}
	s.waitCustomFinal(t, m.ID(), exec)

	newStart := func() string { return `{"request_id":"` + uuid.NewString() + `"}` }
	n := 0
	newName := func() string {
		n++
		return jsonBody(map[string]string{"company": "acme", "name": fmt.Sprintf("motd-%d", n), "source": motd})()
	}
	mm, d := "/v1/minions/"+m.ID(), "/v1/custom-states/"+def.ID
	const ok, created, conflict = 200, 201, 409
	fixtures := map[string]routeFixture{
		"POST /v1/requests/{profile}/{minion}":                           {"/v1/requests/configure/" + m.ID(), newStart, created},
		"GET /v1/requests/{profile}/{minion}/{request_id}":               {"/v1/requests/configure/" + m.ID() + "/" + done.RequestID, nil, ok},
		"GET /v1/requests/{profile}/{minion}/{request_id}/events":        {"/v1/requests/configure/" + m.ID() + "/" + done.RequestID + "/events", nil, ok},
		"POST /v1/requests/{minion}/{request_id}/resume":                 {"/v1/requests/" + m.ID() + "/" + done.RequestID + "/resume", nil, conflict},
		"GET /v1/unresolved":                                             {"/v1/unresolved", nil, ok},
		"GET /v1/minions/{minion}/ping":                                  {mm + "/ping", nil, ok},
		"POST /v1/custom-states/validate":                                {"/v1/custom-states/validate", jsonBody(map[string]string{"source": motd}), ok},
		"POST /v1/custom-states":                                         {"/v1/custom-states", newName, created},
		"GET /v1/custom-states":                                          {"/v1/custom-states", nil, ok},
		"GET /v1/custom-states/{id}":                                     {d, nil, ok},
		"PUT /v1/custom-states/{id}/source":                              {d + "/source", jsonBody(map[string]string{"source": motd + "# edited\n"}), ok},
		"PUT /v1/minions/{minion}/custom-states/{id}":                    {mm + "/custom-states/" + def.ID, nil, ok},
		"GET /v1/minions/{minion}/custom-states":                         {mm + "/custom-states", nil, ok},
		"POST /v1/minions/{minion}/custom-states/{id}/apply":             {mm + "/custom-states/" + def.ID + "/apply", func() string { return `{"request_id":"` + exec + `"}` }, ok},
		"GET /v1/minions/{minion}/custom-executions":                     {mm + "/custom-executions", nil, ok},
		"GET /v1/minions/{minion}/custom-executions/{request_id}":        {mm + "/custom-executions/" + exec, nil, ok},
		"GET /v1/minions/{minion}/custom-executions/{request_id}/events": {mm + "/custom-executions/" + exec + "/events", nil, ok},
		"GET /metrics": {"/metrics", nil, ok},
		"/":            {"/v1/reconcile", nil, http.StatusNotFound},
	}
	type call struct {
		name, method, path string
		body               func() string
		want               [5]int
	}
	var calls []call
	for _, rd := range service.Routes(s.svc) {
		f, found := fixtures[rd.Pattern]
		if !found {
			t.Errorf("route %q (%s) of the table has no fixture in this test: add one", rd.Pattern, rd.Action)
			continue
		}
		delete(fixtures, rd.Pattern)
		method := rd.Method
		if method == "" {
			method = "GET"
		}
		c := call{name: rd.Action, method: method, path: f.path, body: f.body}
		for i, who := range callers {
			c.want[i] = expected(rd, who, f.ok)
		}
		calls = append(calls, c)
		if rd.Minion && rd.Mutating && rd.Action == "start" {
			// A write to an unbound client: the role first, then 409 unbound_client for any administrator.
			u := call{name: "start on an unbound client", method: method, path: "/v1/requests/configure/" + unbound.ID(), body: newStart}
			for i, who := range callers {
				u.want[i] = expected(rd, who, conflict)
				if callerRole[who].admin {
					u.want[i] = conflict
				}
			}
			calls = append(calls, u)
		}
	}
	for p := range fixtures {
		t.Errorf("fixture %q names no route of the table", p)
	}
	// The open routes are outside the table: anyone, no principal needed.
	calls = append(calls, call{"healthz", "GET", "/healthz", nil, [5]int{ok, ok, ok, ok, ok}},
		call{"readyz", "GET", "/readyz", nil, [5]int{ok, ok, ok, ok, ok}})
	for _, tc := range calls {
		t.Run(tc.name, func(t *testing.T) {
			for i, who := range callers {
				before := settledState(t, s, env)
				runs := m.Calls("oduflow_job.run") + unbound.Calls("oduflow_job.run")
				var rd io.Reader
				if tc.body != nil {
					rd = strings.NewReader(tc.body())
				}
				resp, err := s.http.Client().Do(s.request(t, who, tc.method, tc.path, rd))
				if err != nil {
					t.Fatal(err)
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != tc.want[i] {
					t.Fatalf("%s as %q: %d %s, want %d", tc.name, who, resp.StatusCode, b, tc.want[i])
				}
				if resp.StatusCode == http.StatusUnauthorized && resp.Header.Get("WWW-Authenticate") != `Bearer realm="oduflow"` {
					t.Fatalf("401 without WWW-Authenticate: %q", resp.Header.Get("WWW-Authenticate"))
				}
				refused := resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden ||
					tc.want[i] == conflict && tc.name == "start on an unbound client"
				if refused {
					if after := settledState(t, s, env); !maps.Equal(before, after) {
						t.Fatalf("%s as %q refused %d but wrote: %d -> %d records", tc.name, who, resp.StatusCode, len(before), len(after))
					}
					if m.Calls("oduflow_job.run")+unbound.Calls("oduflow_job.run") != runs {
						t.Fatalf("%s as %q: a refused call published a run", tc.name, who)
					}
				}
				if who == observer && resp.StatusCode == ok && strings.Contains(string(b), "contents: hello") {
					t.Fatalf("%s: an observer read the source: %s", tc.name, b)
				}
				if tc.name == "custom_get" && who == admin && !strings.Contains(string(b), `"source":"motd:`) {
					t.Fatalf("the administrator reads the source: %s", b)
				}
			}
		})
	}
}

// waitCustomFinal waits until the custom execution's worker (in the service's process) has ended, then
// reads its status once: it must have succeeded.
func (s *server) waitCustomFinal(t testing.TB, minion, request string) {
	t.Helper()
	s.waitWorkers(t)
	var r struct {
		Status oduflow.CustomResponse `json:"status"`
	}
	if code := s.do(t, "GET", "/v1/minions/"+minion+"/custom-executions/"+request, nil, &r); code != http.StatusOK {
		t.Fatalf("custom status: %d", code)
	}
	if r.Status.Status != receipt.StatusSucceeded {
		t.Fatalf("custom execution after its worker ended: %+v", r.Status)
	}
}

// waitWorkers waits until every worker the service's Dispatcher started has ended (Dispatcher.Wait):
// the claim store and the catalog change only in a handler, before it answers, and in a worker.
func (s *server) waitWorkers(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := s.svc.Dispatcher().Wait(ctx); err != nil {
		t.Fatalf("the service's workers did not end: %v", err)
	}
}

// stateOf is every record of the claim store and the catalog with the SHA-256 of its content
// (temporary files left out).
func stateOf(t testing.TB, env *simEnv) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, dir := range []string{env.claims, env.catalog} {
		err := walk(dir, func(path string) {
			if strings.HasPrefix(filepath.Base(path), ".tmp-") {
				return
			}
			b, err := os.ReadFile(path)
			if err != nil {
				return // removed between the listing and the read
			}
			sum := sha256.Sum256(b)
			out[path] = hex.EncodeToString(sum[:])
		})
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
	}
	return out
}

// settledState is stateOf once the service's workers have ended (nothing else writes after an answer).
func settledState(t testing.TB, s *server, env *simEnv) map[string]string {
	t.Helper()
	s.waitWorkers(t)
	return stateOf(t, env)
}
