package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/oduflow/oduflow-go/internal/testwait"
)

// startEvents runs `oduflowctl events ARGS` in the background and returns once it says it
// is reading the bus (the bus has no replay: events fired earlier would be lost).
func startEvents(t *testing.T, env []string, args ...string) <-chan result {
	t.Helper()
	ready := filepath.Join(t.TempDir(), "stderr")
	done := make(chan result, 1)
	go func() { done <- runTee(t, env, ready, append([]string{"events"}, args...)...) }()
	testwait.Until(t, "events never connected", 10*time.Second, func() bool {
		b, _ := os.ReadFile(ready)
		return strings.Contains(string(b), "events: reading")
	})
	return done
}

func TestEventsAreSanitized(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	done := startEvents(t, l.env, "--count", "3")
	fire := func(tag string, data map[string]any) {
		if err := l.sim.FireEvent(tag, data); err != nil {
			t.Fatal(err)
		}
	}
	fire("salt/job/20261129000000000001/error", map[string]any{"password": "hunter2-pw", "fun": "test.ping"})
	fire("salt/auth", map[string]any{"id": "x", "token": "tok-123", "nested": map[string]any{"api_key": "k-1"}})
	fire("salt/job/20261129000000000002/ret/"+l.minion, map[string]any{"fun": "state.apply", "id": l.minion,
		"return": map[string]any{"a": map[string]any{"result": true, "comment": "secret comment"}}})
	fire("salt/job/20261129000000000003/ret/"+l.minion, map[string]any{"fun": "test.ping", "id": l.minion, "return": true})
	r := <-done
	must(t, r, 0)
	out := r.stdout
	for _, leak := range []string{"hunter2-pw", "tok-123", "k-1", "secret comment", "/error"} {
		if strings.Contains(out, leak) {
			t.Errorf("events leaked %q: %s", leak, out)
		}
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 {
		t.Fatalf("want 3 lines, got %q", out)
	}
	if !strings.Contains(lines[0], `"token":"<redacted>"`) || !strings.Contains(lines[1], `"status":"succeeded"`) ||
		!strings.Contains(lines[2], `"return":true`) {
		t.Fatalf("events: %s", out)
	}
}

func TestEventsRawSaysSo(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	done := startEvents(t, l.env, "--raw", "--count", "1", "--tag", "salt/job/")
	_ = l.sim.FireEvent("other/tag", map[string]any{"x": 1})
	_ = l.sim.FireEvent("salt/job/20261129000000000002/ret/"+l.minion, map[string]any{"fun": "state.apply",
		"return": map[string]any{"a": map[string]any{"result": true, "comment": "whole comment"}}})
	r := <-done
	must(t, r, 0)
	if !strings.Contains(r.stdout, "whole comment") || !strings.Contains(r.stderr, "--raw") {
		t.Fatalf("raw: %s", r)
	}
}

func TestDemo(t *testing.T) {
	t.Parallel()
	start := time.Now()
	r := run(t, nil, "demo")
	must(t, r, 0)
	if d := time.Since(start); d > 30*time.Second {
		t.Fatalf("demo took %s", d)
	}
	for _, want := range []string{
		"1. ping", `"ready"`, "2. configure", `"status":"succeeded","passed":3,"total":3`,
		"3. production", `"status":"failed","passed":2,"total":3`,
		"4. repeat", "nothing was published again", "5. lost return", "read its durable receipt",
		"6. custom state", "digest", "custom status -> ", "done in",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("demo output lacks %q", want)
		}
	}
	if t.Failed() {
		t.Log(r.stdout)
	}
}

func TestDemoWithoutPython(t *testing.T) {
	t.Parallel()
	r := run(t, []string{"PATH=/nonexistent"}, "demo")
	must(t, r, 0)
	for _, want := range []string{"the Go model of oduflow_job", `"status":"failed","passed":2,"total":3`,
		"read its durable receipt", "custom status -> ", `"status":"succeeded","passed":1,"total":1,"error_code":""}`} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("demo output lacks %q:\n%s", want, r.stdout)
		}
	}
}
