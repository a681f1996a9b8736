package service_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/oduflow/oduflow-go/examples/controller/internal/service"
	"github.com/oduflow/oduflow-go/examples/internal/oduflowenv"
	"github.com/oduflow/oduflow-go/oduflow"
	"github.com/oduflow/oduflow-go/oduflow/oduflowtest/fakeminion"
	"github.com/oduflow/oduflow-go/oduflow/oduflowtest/simenv"
	"github.com/oduflow/oduflow-go/receipt"
	"github.com/oduflow/oduflow-go/salt/salttest"
)

// simEnv is the Salt master simulator on real sockets with fake minions (oduflowtest/simenv), and
// controller services on it served by httptest over real sockets.
type simEnv struct {
	*simenv.Env
	t       testing.TB
	sim     *salttest.Master
	claims  string // the claim store directory the services share
	catalog string // the custom-state catalog next to it
	minions []string
}

func startSim(t testing.TB) *simEnv {
	t.Helper()
	e := simenv.Start(t)
	dir := t.TempDir()
	return &simEnv{Env: e, t: t, sim: e.Master(), claims: filepath.Join(dir, "claims"), catalog: filepath.Join(dir, "catalog")}
}

// settings are the ODUFLOW_* settings of a service on the simulator.
func (e *simEnv) settings() oduflowenv.Settings {
	return oduflowenv.Settings{Master: e.sim.Addr(), Events: e.sim.EventsAddr(), KeyFile: e.sim.KeyFile(),
		PKIDir: e.sim.PKIDir(), StateDir: e.claims}
}

// addMinion adds a fake minion whose configure runs succeed (3/3) unless opts say otherwise; a server
// made afterwards binds it to company acme.
func (e *simEnv) addMinion(opts ...fakeminion.ModelOption) *fakeminion.Model {
	e.t.Helper()
	m := e.AddMinion(opts...)
	e.minions = append(e.minions, m.ID())
	return m
}

// The test principals: administrators and observers of company acme (every minion's) and of globex,
// and an administrator of every company.
const (
	admin         = "admin"          // administrator acme
	observer      = "observer"       // observer acme
	otherObserver = "other-observer" // observer globex
	otherAdmin    = "other-admin"    // administrator globex
	rootAdmin     = "root"           // administrator *
	nobody        = ""               // no token
)

var principals = map[string]string{admin: "administrator acme", observer: "observer acme,initech",
	otherObserver: "observer globex", otherAdmin: "administrator globex,initech", rootAdmin: "administrator *"}

// server is a service on the simulator behind an httptest server; the service's log goes to logs, its
// audit trail (JSON) to audit. do sends the token of as (admin by default).
type server struct {
	svc    *service.Service
	http   *httptest.Server
	logs   *lockedWriter
	audit  *lockedWriter
	tokens map[string]string // principal -> token
	as     string
	cfg    service.Config // its configuration (file paths)
}

// serverConfig is a service's configuration on the simulator: a token file (0600) for principals, the
// client bindings of every minion added so far (acme), the catalog next to the claims.
func (e *simEnv) serverConfig() (service.Config, map[string]string) {
	e.t.Helper()
	dir := e.t.TempDir()
	tokens := map[string]string{}
	var tf strings.Builder
	tf.WriteString("# test principals\n\n")
	for name, rest := range principals {
		tok := fmt.Sprintf("tok-%s-%d", name, time.Now().UnixNano())
		tokens[name] = tok
		sum := sha256.Sum256([]byte(tok))
		fmt.Fprintf(&tf, "%s %s %s\n", name, rest, hex.EncodeToString(sum[:]))
	}
	tokFile, clientsFile := filepath.Join(dir, "tokens"), filepath.Join(dir, "clients")
	var cf strings.Builder
	for _, m := range e.minions {
		fmt.Fprintf(&cf, "%s acme\n", m)
	}
	if err := os.WriteFile(tokFile, []byte(tf.String()), 0o600); err != nil {
		e.t.Fatal(err)
	}
	if err := os.WriteFile(clientsFile, []byte(cf.String()), 0o644); err != nil {
		e.t.Fatal(err)
	}
	return service.Config{Settings: e.settings(), CatalogDir: e.catalog,
		Auth: service.AuthConfig{TokensFile: tokFile, ClientsFile: clientsFile}}, tokens
}

func (e *simEnv) server(edit ...func(*service.Config)) *server {
	e.t.Helper()
	return e.serverTimed(testTimers(), edit...)
}

// serverTimed is server with the dispatcher's timers tm.
func (e *simEnv) serverTimed(tm oduflow.Timers, edit ...func(*service.Config)) *server {
	e.t.Helper()
	logs, audit := &lockedWriter{w: new(bytes.Buffer)}, &lockedWriter{w: new(bytes.Buffer)}
	cfg, tokens := e.serverConfig()
	for _, f := range edit {
		f(&cfg)
	}
	svc, err := service.Open(context.Background(), cfg,
		service.WithLogger(slog.New(slog.NewTextHandler(logs, nil))),
		service.WithAuditLogger(slog.New(slog.NewJSONHandler(audit, nil))),
		service.WithTimers(tm), service.WithoutAdoption())
	if err != nil {
		e.t.Fatal(err)
	}
	hs := httptest.NewServer(svc.Handler())
	e.t.Cleanup(func() {
		hs.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = svc.Close(ctx)
	})
	return &server{svc: svc, http: hs, logs: logs, audit: audit, tokens: tokens, as: admin, cfg: cfg}
}

// do sends a request as s.as and decodes the JSON answer into out (when not nil); it returns the status
// code.
func (s *server) do(t testing.TB, method, path string, body io.Reader, out any) int {
	t.Helper()
	return s.doAs(t, s.as, method, path, body, out)
}

// request is a request carrying who's token (none for nobody).
func (s *server) request(t testing.TB, who, method, path string, body io.Reader) *http.Request {
	t.Helper()
	req, err := http.NewRequest(method, s.http.URL+path, body)
	if err != nil {
		t.Fatal(err)
	}
	if who != nobody {
		req.Header.Set("Authorization", "Bearer "+s.tokens[who])
	}
	return req
}

// doAs is do as who.
func (s *server) doAs(t testing.TB, who, method, path string, body io.Reader, out any) int {
	t.Helper()
	resp, err := s.http.Client().Do(s.request(t, who, method, path, body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s %s: %d %q: %v", method, path, resp.StatusCode, b, err)
		}
	}
	return resp.StatusCode
}

// waitFinal follows the request's server-sent events (GET …/events) until its status is final (succeeded,
// failed or unknown): each change arrives as the worker commits it, no polling.
func (s *server) waitFinal(t testing.TB, minion, request string) oduflow.Response {
	t.Helper()
	return s.waitFinalOf(t, "configure", minion, request)
}

// waitFinalOf is waitFinal for a request of any profile of the service's table.
func (s *server) waitFinalOf(t testing.TB, profile, minion, request string) oduflow.Response {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	r := s.request(t, s.as, "GET", "/v1/requests/"+profile+"/"+minion+"/"+request+"/events", nil).WithContext(ctx)
	resp, err := s.http.Client().Do(r)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status events: %d", resp.StatusCode)
	}
	var last oduflow.Response
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		if err := json.Unmarshal([]byte(data), &last); err != nil {
			t.Fatalf("event %q: %v", data, err)
		}
		if last.Status.Terminal() || last.Status == receipt.StatusUnknown {
			return last
		}
	}
	t.Fatalf("not final: %+v (%v)", last, sc.Err())
	return last
}

// startFinal starts a configure request of a new id on minion (201 created) and waits until its status
// is final.
func (s *server) startFinal(t testing.TB, minion string) oduflow.Response {
	t.Helper()
	var r oduflow.Response
	if code := s.do(t, "POST", "/v1/requests/configure/"+minion, nil, &r); code != http.StatusCreated {
		t.Fatalf("start: %d", code)
	}
	s.waitFinal(t, minion, r.RequestID)
	return r
}

// testTimers are short windows, so that a test that goes wrong ends in seconds.
func testTimers() oduflow.Timers { return simenv.Timers() }
