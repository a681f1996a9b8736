package service_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/oduflow/oduflow-go/oduflow/oduflowtest/fakeminion"
)

// /readyz stays 200 while some minions' module guard fails (the service dispatches to the others) and
// names each reason the ping route saw with how many minions reported it, never a minion id (the route is
// open); the authenticated ping route names the minion's own reason.
func TestReadyzNamesGuardFailuresSeenByPing(t *testing.T) {
	t.Parallel()
	env := startSim(t)
	reason := fakeminion.GuardFailureReasons()[0]
	bad1 := env.addMinion(fakeminion.WithRuntimeGuardFailure(reason))
	bad2 := env.addMinion(fakeminion.WithRuntimeGuardFailure(reason))
	good := env.addMinion()
	s := env.server()

	var ready map[string]any
	if code := s.doAs(t, nobody, "GET", "/readyz", nil, &ready); code != http.StatusOK || ready["runtime_guard_failures"] != nil {
		t.Fatalf("readyz before any ping: %d %v", code, ready)
	}
	for _, m := range []*fakeminion.Model{bad1, bad2, good} {
		var ping map[string]any
		if code := s.doAs(t, observer, "GET", "/v1/minions/"+m.ID()+"/ping", nil, &ping); code != http.StatusOK {
			t.Fatalf("ping %s: %d %v", m.ID(), code, ping)
		}
		if m != good && (ping["ready"] != false || ping["runtime_guard"] != false || ping["runtime_guard_error"] != reason) {
			t.Fatalf("ping of a guard-failed minion: %v", ping)
		}
	}
	ready = nil
	if code := s.doAs(t, nobody, "GET", "/readyz", nil, &ready); code != http.StatusOK {
		t.Fatalf("readyz: %d %v", code, ready)
	}
	f, _ := ready["runtime_guard_failures"].([]any)
	if len(f) != 1 {
		t.Fatalf("readyz runtime_guard_failures: %v", ready)
	}
	one, _ := f[0].(map[string]any)
	if one["reason"] != reason || one["minions"] != float64(2) {
		t.Fatalf("readyz failure: %v", one)
	}
	resp, err := http.Get(s.http.URL + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	for _, m := range []*fakeminion.Model{bad1, bad2, good} {
		if strings.Contains(string(raw), m.ID()) {
			t.Fatalf("readyz names minion %s: %s", m.ID(), raw)
		}
	}
}
