package service_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"maps"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
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

// TestRouteDeclarations: every route of the API's and the console's tables declares what its method and path imply: a write
// (any method but GET) is an administrator's and mutating (validate alone is an administrator's read:
// it compiles, never writes), a GET never mutates; a {minion} in the path is scopeMinion and an {id}
// scopeDefinition, both ways; a write with no target in its path names its company in the body. A route
// added without its declaration, or with a wrong one, fails here.
func TestRouteDeclarations(t *testing.T) {
	t.Parallel()
	env := startSim(t)
	readsOnly := map[string]bool{"custom_validate": true}
	svc := env.server().svc
	for _, d := range append(service.Routes(svc), service.ConsoleRoutes(svc)...) {
		write := d.Method != "GET" && d.Method != ""
		if d.Action == "ui_logout" {
			// Sign-out: any principal ends its own session (a write with no company's target).
			if d.Admin || !d.Mutating || d.Minion || d.Definition || d.BodyCompany || d.Listed {
				t.Errorf("%s: sign-out is any principal's write of its own session", d.Pattern)
			}
			continue
		}
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
	w := newWalkState(t)
	env, m, unbound, s, done, exec := w.env, w.m, w.unbound, w.s, w.done, w.exec
	def := struct{ ID string }{w.def}

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

// walkState is what the route walks read: acme's client m with a succeeded configure (done), a
// definition of acme (def) assigned to m and an execution of it (exec), and an unbound client.
type walkState struct {
	env        *simEnv
	s          *server
	m, unbound interface {
		ID() string
		Calls(string) int
	}
	done      oduflow.Response
	def, exec string
}

func newWalkState(t *testing.T) walkState {
	t.Helper()
	env := startSim(t)
	m := env.addMinion()
	unbound := env.AddMinion() // not bound to a company (added around addMinion)
	s := env.server()
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
	return walkState{env: env, s: s, m: m, unbound: unbound, done: done, def: def.ID, exec: exec}
}

// Every route of the console's table (service.ConsoleRoutes) × every caller: the status its declaration
// implies (no principal: to the sign-in page for a GET, 401 for a POST; a refusal: its 403 page), with
// the caller's CSRF token on every POST, and that a refusal wrote and published nothing. The console's
// calls into the API are authorized again there; this walk shows the console's own step.
func TestEveryConsoleRouteByEveryCaller(t *testing.T) {
	t.Parallel()
	w := newWalkState(t)
	s, m := w.s, w.m
	csrf := map[string]string{}
	meta := regexp.MustCompile(`<meta name="csrf-token" content="([^"]+)">`)
	for _, who := range callers[1:] {
		resp, err := s.http.Client().Do(s.request(t, who, "GET", "/ui/clients", nil))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if mm := meta.FindSubmatch(b); mm != nil {
			csrf[who] = html.UnescapeString(string(mm[1]))
		} else {
			t.Fatalf("no CSRF token on %s's page", who)
		}
	}
	form := func(kv ...string) func() url.Values {
		return func() url.Values {
			v := url.Values{}
			for i := 0; i+1 < len(kv); i += 2 {
				v.Set(kv[i], kv[i+1])
			}
			return v
		}
	}
	n := 0
	cl, d := "/ui/clients/"+m.ID(), "/ui/custom-states/"+w.def
	const ok, see = http.StatusOK, http.StatusSeeOther
	fixtures := map[string]struct {
		path string
		form func() url.Values
		ok   int
	}{
		"POST /ui/logout":                                          {"/ui/logout", form(), see},
		"GET /ui/clients":                                          {"/ui/clients", nil, ok},
		"GET /ui/clients/{minion}":                                 {cl, nil, ok},
		"GET /ui/clients/{minion}/start/{profile}":                 {cl + "/start/configure", nil, ok},
		"POST /ui/clients/{minion}/start/{profile}":                {cl + "/start/configure", func() url.Values { return url.Values{"request_id": {uuid.NewString()}} }, see},
		"GET /ui/clients/{minion}/requests/{profile}/{request_id}": {cl + "/requests/configure/" + w.done.RequestID, nil, ok},
		"POST /ui/clients/{minion}/requests/{request_id}/resume":   {cl + "/requests/" + w.done.RequestID + "/resume", form("profile", "configure"), http.StatusConflict},
		"GET /ui/unresolved":                                       {"/ui/unresolved", nil, ok},
		"GET /ui/custom-states":                                    {"/ui/custom-states", nil, ok},
		"GET /ui/custom-states/new":                                {"/ui/custom-states/new", nil, ok},
		"POST /ui/custom-states": {"/ui/custom-states", func() url.Values {
			n++
			return url.Values{"company": {"acme"}, "name": {fmt.Sprintf("ui-%d", n)}, "source": {motd}}
		}, see},
		"GET /ui/custom-states/{id}":                         {d, nil, ok},
		"POST /ui/custom-states/{id}/source":                 {d + "/source", form("source", motd+"# console\n"), see},
		"POST /ui/custom-states/{id}/assign":                 {d + "/assign", form("minion", m.ID()), see},
		"POST /ui/api/custom-states/validate":                {"/ui/api/custom-states/validate", nil, ok},
		"POST /ui/clients/{minion}/custom-states/{id}/apply": {cl + "/custom-states/" + w.def + "/apply", form("request_id", w.exec), see},
		"GET /ui/clients/{minion}/executions/{request_id}":   {cl + "/executions/" + w.exec, nil, ok},
	}
	for _, rd := range service.ConsoleRoutes(s.svc) {
		f, found := fixtures[rd.Pattern]
		if !found {
			t.Errorf("console route %q (%s) has no fixture in this test: add one", rd.Pattern, rd.Action)
			continue
		}
		delete(fixtures, rd.Pattern)
		t.Run(rd.Action+" "+rd.Method, func(t *testing.T) {
			for _, who := range callers {
				want := expected(rd, who, f.ok)
				if who == nobody && rd.Method == "GET" {
					want = see // to the sign-in page
				}
				before := settledState(t, s, w.env)
				runs := m.Calls("oduflow_job.run")
				var req *http.Request
				switch {
				case rd.Method == "GET":
					req = s.request(t, who, "GET", f.path, nil)
				case f.form == nil: // the editor's validate: JSON with the token in a header
					req = s.request(t, who, "POST", f.path, strings.NewReader(jsonBody(map[string]string{"source": motd})()))
					req.Header.Set("Content-Type", "application/json")
					req.Header.Set("X-CSRF-Token", csrf[who])
				default:
					v := f.form()
					v.Set("csrf", csrf[who])
					req = s.request(t, who, "POST", f.path, strings.NewReader(v.Encode()))
					req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
				}
				client := *s.http.Client()
				client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
				resp, err := client.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != want {
					t.Fatalf("%s %s as %q: %d, want %d\n%s", rd.Method, f.path, who, resp.StatusCode, want, truncated(b))
				}
				if want != f.ok {
					if after := settledState(t, s, w.env); !maps.Equal(before, after) {
						t.Fatalf("%s as %q refused %d but wrote", rd.Pattern, who, resp.StatusCode)
					}
					if m.Calls("oduflow_job.run") != runs {
						t.Fatalf("%s as %q: a refused call published a run", rd.Pattern, who)
					}
				}
			}
		})
	}
	for p := range fixtures {
		t.Errorf("fixture %q names no console route", p)
	}
}

func truncated(b []byte) string {
	if len(b) > 400 {
		return string(b[:400]) + "..."
	}
	return string(b)
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
