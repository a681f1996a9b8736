package service_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
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
	t      testing.TB
	sim    *salttest.Master
	claims string // the claim store directory the services share
}

func startSim(t testing.TB) *simEnv {
	t.Helper()
	e := simenv.Start(t)
	return &simEnv{Env: e, t: t, sim: e.Master(), claims: filepath.Join(t.TempDir(), "claims")}
}

// settings are the ODUFLOW_* settings of a service on the simulator.
func (e *simEnv) settings() oduflowenv.Settings {
	return oduflowenv.Settings{Master: e.sim.Addr(), Events: e.sim.EventsAddr(), KeyFile: e.sim.KeyFile(),
		PKIDir: e.sim.PKIDir(), StateDir: e.claims}
}

// addMinion adds a fake minion whose configure runs succeed (3/3) unless opts say otherwise.
func (e *simEnv) addMinion(opts ...fakeminion.ModelOption) *fakeminion.Model {
	e.t.Helper()
	return e.AddMinion(opts...)
}

// server is a service on the simulator behind an httptest server; the service's log goes to logs.
type server struct {
	svc  *service.Service
	http *httptest.Server
	logs *lockedWriter
}

func (e *simEnv) server() *server {
	e.t.Helper()
	logs := &lockedWriter{w: new(bytes.Buffer)}
	svc, err := service.Open(context.Background(), service.Config{Settings: e.settings()},
		service.WithLogger(slog.New(slog.NewTextHandler(logs, nil))),
		service.WithDispatcherOptions(oduflow.WithTimers(testTimers())))
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
	return &server{svc: svc, http: hs, logs: logs}
}

// do sends a request and decodes the JSON answer into out (when not nil); it returns the status code.
func (s *server) do(t testing.TB, method, path string, body io.Reader, out any) int {
	t.Helper()
	req, err := http.NewRequest(method, s.http.URL+path, body)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := s.http.Client().Do(req)
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

// waitFinal polls GET status until the request is final.
func (s *server) waitFinal(t testing.TB, minion, request string) oduflow.Response {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		var r oduflow.Response
		if code := s.do(t, "GET", "/v1/requests/configure/"+minion+"/"+request, nil, &r); code != http.StatusOK {
			t.Fatalf("status: %d %+v", code, r)
		}
		if r.Status.Terminal() || r.Status == receipt.StatusUnknown {
			return r
		}
		if time.Now().After(deadline) {
			t.Fatalf("not final: %+v", r)
		}
		time.Sleep(5 * time.Millisecond)
	}
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
