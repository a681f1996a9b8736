package service_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/oduflow/oduflow-go/oduflow"
	"github.com/oduflow/oduflow-go/receipt"
)

const motd = "motd:\n  file.managed:\n    - name: /etc/motd\n    - contents: hello\n"

// callers is the order of a route's expected codes.
var callers = []string{nobody, observer, otherObserver, otherAdmin, admin}

// routeCase is one route: its method, path and body (made again for each call) and the status each
// caller gets (callers' order).
type routeCase struct {
	name, method, path string
	body               func() string
	want               [5]int
}

func jsonBody(v any) func() string {
	return func() string {
		b, _ := json.Marshal(v)
		return string(b)
	}
}

// Every route × {no principal, observer of the company, observer of another company, administrator of
// another company, administrator of the company}: the status, and that a refusal (401, 403, 409
// unbound_client) wrote nothing (the claim store and the catalog, byte for byte) and published nothing.
func TestEveryRouteByEveryCaller(t *testing.T) {
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
		return jsonBody(map[string]string{"company": "acme", "name": "motd-" + time.Now().Format("150405.000000") + "-" + string(rune('a'+n%26)), "source": motd})()
	}
	mm, d := "/v1/minions/"+m.ID(), "/v1/custom-states/"+def.ID
	const (
		ok, created, unauth, forbidden, conflict = 200, 201, 401, 403, 409
	)
	cases := []routeCase{
		{"start", "POST", "/v1/requests/configure/" + m.ID(), newStart, [5]int{unauth, forbidden, forbidden, forbidden, created}},
		{"start on an unbound client", "POST", "/v1/requests/configure/" + unbound.ID(), newStart, [5]int{unauth, forbidden, forbidden, conflict, conflict}},
		{"status", "GET", "/v1/requests/configure/" + m.ID() + "/" + done.RequestID, nil, [5]int{unauth, ok, forbidden, forbidden, ok}},
		{"status events", "GET", "/v1/requests/configure/" + m.ID() + "/" + done.RequestID + "/events", nil, [5]int{unauth, ok, forbidden, forbidden, ok}},
		{"resume", "POST", "/v1/requests/" + m.ID() + "/" + done.RequestID + "/resume", nil, [5]int{unauth, forbidden, forbidden, forbidden, conflict}},
		{"unresolved", "GET", "/v1/unresolved", nil, [5]int{unauth, ok, ok, ok, ok}},
		{"ping", "GET", mm + "/ping", nil, [5]int{unauth, ok, forbidden, forbidden, ok}},
		{"validate", "POST", "/v1/custom-states/validate", jsonBody(map[string]string{"source": motd}), [5]int{unauth, forbidden, forbidden, ok, ok}},
		{"create definition", "POST", "/v1/custom-states", newName, [5]int{unauth, forbidden, forbidden, forbidden, created}},
		{"list definitions", "GET", "/v1/custom-states", nil, [5]int{unauth, ok, ok, ok, ok}},
		{"get definition", "GET", d, nil, [5]int{unauth, ok, forbidden, forbidden, ok}},
		{"save source", "PUT", d + "/source", jsonBody(map[string]string{"source": motd + "# edited\n"}), [5]int{unauth, forbidden, forbidden, forbidden, ok}},
		{"assign", "PUT", mm + "/custom-states/" + def.ID, nil, [5]int{unauth, forbidden, forbidden, forbidden, ok}},
		{"assignments", "GET", mm + "/custom-states", nil, [5]int{unauth, ok, forbidden, forbidden, ok}},
		{"apply", "POST", mm + "/custom-states/" + def.ID + "/apply", func() string { return `{"request_id":"` + exec + `"}` }, [5]int{unauth, forbidden, forbidden, forbidden, ok}},
		{"executions", "GET", mm + "/custom-executions", nil, [5]int{unauth, ok, forbidden, forbidden, ok}},
		{"execution status", "GET", mm + "/custom-executions/" + exec, nil, [5]int{unauth, ok, forbidden, forbidden, ok}},
		{"execution events", "GET", mm + "/custom-executions/" + exec + "/events", nil, [5]int{unauth, ok, forbidden, forbidden, ok}},
		{"metrics", "GET", "/metrics", nil, [5]int{unauth, ok, ok, ok, ok}},
		{"no route", "GET", "/v1/reconcile", nil, [5]int{unauth, 404, 404, 404, 404}},
		{"healthz", "GET", "/healthz", nil, [5]int{ok, ok, ok, ok, ok}},
		{"readyz", "GET", "/readyz", nil, [5]int{ok, ok, ok, ok, ok}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for i, who := range callers {
				before := settledState(t, env)
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
				refused := resp.StatusCode == unauth || resp.StatusCode == forbidden || tc.want[i] == conflict && tc.name == "start on an unbound client"
				if refused {
					if after := stateOf(t, env); !maps.Equal(before, after) {
						t.Fatalf("%s as %q refused %d but wrote: %d -> %d records", tc.name, who, resp.StatusCode, len(before), len(after))
					}
					if m.Calls("oduflow_job.run")+unbound.Calls("oduflow_job.run") != runs {
						t.Fatalf("%s as %q: a refused call published a run", tc.name, who)
					}
				}
				if who == observer && resp.StatusCode == ok && strings.Contains(string(b), "contents: hello") {
					t.Fatalf("%s: an observer read the source: %s", tc.name, b)
				}
				if tc.name == "get definition" && who == admin && !strings.Contains(string(b), `"source":"motd:`) {
					t.Fatalf("the administrator reads the source: %s", b)
				}
			}
			// A started request ends before the next route's snapshot.
			time.Sleep(10 * time.Millisecond)
		})
	}
}

// waitCustomFinal polls the custom status until it is final.
func (s *server) waitCustomFinal(t testing.TB, minion, request string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		var r struct {
			Status oduflow.CustomResponse `json:"status"`
		}
		if code := s.do(t, "GET", "/v1/minions/"+minion+"/custom-executions/"+request, nil, &r); code != http.StatusOK {
			t.Fatalf("custom status: %d", code)
		}
		if r.Status.Status.Terminal() || r.Status.Status == receipt.StatusUnknown {
			if r.Status.Status != receipt.StatusSucceeded {
				t.Fatalf("custom execution: %+v", r.Status)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("custom execution not final: %+v", r.Status)
		}
		time.Sleep(10 * time.Millisecond)
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

// settledState waits until stateOf stops changing (a request that answered may still be writing).
func settledState(t testing.TB, env *simEnv) map[string]string {
	t.Helper()
	last := stateOf(t, env)
	for deadline := time.Now().Add(20 * time.Second); ; {
		time.Sleep(50 * time.Millisecond)
		now := stateOf(t, env)
		if maps.Equal(now, last) {
			return now
		}
		if time.Now().After(deadline) {
			t.Fatal("the stores kept changing")
		}
		last = now
	}
}
