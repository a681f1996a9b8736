package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/oduflow/oduflow-go/salt/salttest"
)

// runLines decodes run's JSON lines: the minions by id, and the summary.
func runLines(t *testing.T, out string) (map[string]map[string]any, map[string]any) {
	t.Helper()
	minions := map[string]map[string]any{}
	var summary map[string]any
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		if s, ok := m["summary"].(map[string]any); ok {
			summary = s
			continue
		}
		id, _ := m["minion"].(string)
		if _, dup := minions[id]; dup {
			t.Fatalf("minion %s printed twice: %s", id, out)
		}
		minions[id] = m
	}
	if summary == nil {
		t.Fatalf("no summary line: %s", out)
	}
	return minions, summary
}

func TestRunExitStatuses(t *testing.T) {
	t.Parallel()
	l := newLabModel(t, false)
	l.sim.AddFleet("ok", 3, nil)
	l.sim.AddFleet("bad", 2, func(i int) salttest.MinionBehavior { return salttest.MinionBehavior{Fail: i == 1} })
	l.sim.AddFleet("mute", 2, func(i int) salttest.MinionBehavior { return salttest.MinionBehavior{Frozen: i == 1} })
	fast := []string{"--timeout", "300ms", "--gather-job-timeout", "500ms", "--output", "json"}

	r := run(t, l.env, append([]string{"run", "ok-*", "test.ping"}, fast...)...)
	must(t, r, 0)
	minions, sum := runLines(t, r.stdout)
	if len(minions) != 3 || sum["returned"] != float64(3) || minions["ok-0000"]["return"] != true {
		t.Fatalf("all ok: %s", r.stdout)
	}

	r = run(t, l.env, append([]string{"run", "bad-*", "test.ping"}, fast...)...)
	must(t, r, 1)
	minions, _ = runLines(t, r.stdout)
	if minions["bad-0001"]["success"] != false || minions["bad-0001"]["retcode"] != float64(1) {
		t.Fatalf("failure: %s", r.stdout)
	}

	r = run(t, l.env, append([]string{"run", "mute-*", "test.ping"}, fast...)...)
	must(t, r, 5)
	minions, sum = runLines(t, r.stdout)
	nr, _ := sum["not_returned"].([]any)
	if minions["mute-0001"]["state"] != "no_response" || len(nr) != 1 ||
		nr[0].(map[string]any)["minion"] != "mute-0001" {
		t.Fatalf("silent minion not named: %s", r.stdout)
	}

	// Like the salt CLI's text: the return under the minion, the silent one named.
	r = run(t, l.env, append([]string{"run", "mute-*", "test.ping"}, append(fast[:4], "--output", "text")...)...)
	must(t, r, 5)
	if !strings.Contains(r.stdout, "mute-0000:\n    True\n") ||
		!strings.Contains(r.stdout, "mute-0001:\n    Minion did not return. [No response]") {
		t.Fatalf("text: %s", r.stdout)
	}
}

func TestRunArgsBatchAsyncAndGuard(t *testing.T) {
	t.Parallel()
	l := newLabModel(t, false)
	l.sim.AddFleet("web", 4, nil)
	fast := []string{"--timeout", "300ms", "--gather-job-timeout", "500ms", "--output", "json"}

	r := run(t, l.env, append([]string{"run", "web-0000,web-0001", "test.arg", "one", "two=2", "--tgt-type", "list"}, fast...)...)
	must(t, r, 0)
	minions, _ := runLines(t, r.stdout)
	ret, _ := minions["web-0001"]["return"].(map[string]any)
	if ret == nil || len(ret["args"].([]any)) != 1 || ret["kwargs"].(map[string]any)["two"] != "2" {
		t.Fatalf("args: %s", r.stdout)
	}

	r = run(t, l.env, append([]string{"run", "web-*", "test.ping", "--batch", "50%"}, fast...)...)
	must(t, r, 0)
	_, sum := runLines(t, r.stdout)
	if sum["returned"] != float64(4) || len(sum["jids"].([]any)) < 3 { // the presence ping and >= 2 sub-jobs
		t.Fatalf("batch: %s", r.stdout)
	}

	r = run(t, l.env, append([]string{"run", "web-*", "test.ping", "--async"}, fast...)...)
	must(t, r, 0)
	var p struct {
		JID     string   `json:"jid"`
		Minions []string `json:"minions"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &p); err != nil || len(p.JID) != 20 || len(p.Minions) != 4 {
		t.Fatalf("async: %s", r.stdout)
	}

	before := l.sim.PublicationCount("", "")
	r = run(t, l.env, "run", "web-*", "oduflow_job.run", "x")
	must(t, r, 2)
	if !strings.Contains(r.stderr, "dispatcher") || l.sim.PublicationCount("", "") != before {
		t.Fatalf("guard: %s", r)
	}
	must(t, run(t, l.env, "run", "web-*", "test.ping", "--tgt-type", "grain"), 2)
	must(t, run(t, l.env, "run", "web-*", "test.ping", "--batch", "0"), 2)
}
