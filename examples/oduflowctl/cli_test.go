package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/oduflow/oduflow-go/internal/testwait"
	"github.com/oduflow/oduflow-go/receipt"
	"github.com/oduflow/oduflow-go/salt/salttest"
)

func TestHelpOnEveryCommand(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"--help"}, {"help"}, {"ping", "--help"}, {"start", "--help"}, {"status", "--help"}, {"resume", "--help"},
		{"reconcile", "--help"}, {"custom", "--help"}, {"custom", "validate", "--help"}, {"custom", "digest", "--help"},
		{"custom", "start", "--help"}, {"custom", "status", "--help"}, {"events", "--help"}, {"module", "--help"},
		{"demo", "--help"}, {"help", "start"},
	} {
		r := run(t, nil, args...)
		must(t, r, 0)
		if !strings.Contains(r.stdout+r.stderr, "Usage: oduflowctl") {
			t.Errorf("%v: no usage: %s", args, r)
		}
	}
}

func TestBadInputIsOneLineExit2(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	m := l.minion
	req := receipt.NewRequestID()
	cases := []struct {
		args []string
		env  []string
		want string
	}{
		{nil, nil, "missing command"},
		{[]string{"frobnicate"}, nil, `unknown command "frobnicate"`},
		{[]string{"--bogus", "ping"}, nil, "flag provided but not defined: -bogus"},
		{[]string{"start", "configure", m, "--bogus"}, l.env, "start: flag provided but not defined: -bogus"},
		{[]string{"start", "configure"}, l.env, "start: missing argument: want PROFILE MINION [REQUEST_ID]"},
		{[]string{"start", "deploy", m}, l.env, `start: unknown profile "deploy"`},
		{[]string{"start", "custom", m}, l.env, "use oduflowctl custom start"},
		{[]string{"start", "configure", "web-1"}, l.env, `start: invalid minion id "web-1"`},
		{[]string{"start", "configure", "client-ABC"}, l.env, `invalid minion id "client-ABC"`},
		{[]string{"start", "configure", m, "not-a-uuid"}, l.env, `start: invalid request id "not-a-uuid"`},
		{[]string{"start", "configure", m, req, "extra"}, l.env, `start: unexpected argument "extra"`},
		{[]string{"start", "configure", m}, nil, "start: missing --master"},
		{[]string{"start", "configure", m}, []string{"ODUFLOW_SALT_MASTER=tcp://127.0.0.1:1"}, "start: missing --events"},
		{[]string{"--master", "http://x", "ping", m}, nil, `ping: --master "http://x": want tcp://host:port`},
		{[]string{"ping", m}, []string{"ODUFLOW_SALT_MASTER=tcp://127.0.0.1:1", "ODUFLOW_SALT_EVENTS=unix:///x"}, "ping: no credentials"},
		{[]string{"ping", m}, []string{"ODUFLOW_SALT_MASTER=tcp://127.0.0.1:1", "ODUFLOW_SALT_EVENTS=unix:///x",
			"ODUFLOW_SALT_EAUTH=pam", "ODUFLOW_SALT_USER=u"}, "needs the password in ODUFLOW_SALT_PASSWORD"},
		{[]string{"--output", "yaml", "status", "configure", m, req}, l.env, `--output: "yaml" is not json or text`},
		{[]string{"status", "configure", m}, l.env, "status: missing argument"},
		{[]string{"reconcile", m, req}, l.env, "reconcile: say --from-minion or --assert"},
		{[]string{"reconcile", m, req, "--assert", "maybe", "--reason", "x"}, l.env, `--assert "maybe": want succeeded or failed`},
		{[]string{"reconcile", m, req, "--assert", "failed"}, l.env, "--assert needs --reason"},
		{[]string{"reconcile", m, req, "--from-minion", "--assert", "failed", "--reason", "x"}, l.env, "exclude each other"},
		{[]string{"custom"}, nil, "custom: missing subcommand"},
		{[]string{"custom", "apply"}, nil, `custom: unknown subcommand "apply"`},
		{[]string{"custom", "validate", "/does/not/exist.yaml"}, nil, `custom validate: cannot read "/does/not/exist.yaml"`},
		{[]string{"events", "--count", "-1"}, l.env, "events: --count -1: must not be negative"},
		{[]string{"events"}, nil, "events: missing --events"},
		{[]string{"module", "--install", "/does/not/exist"}, nil, `module: --install "/does/not/exist": not an existing directory`},
		{[]string{"module", "extra"}, nil, `module: unexpected argument "extra"`},
		{[]string{"demo", "now"}, nil, `demo: unexpected argument "now"`},
	}
	for _, tc := range cases {
		r := run(t, tc.env, tc.args...)
		if r.code != 2 {
			t.Errorf("%v: want exit 2, got %s", tc.args, r)
			continue
		}
		line := strings.TrimRight(r.stderr, "\n")
		if strings.Contains(line, "\n") || !strings.Contains(line, tc.want) {
			t.Errorf("%v: want one line containing %q, got %q", tc.args, tc.want, r.stderr)
		}
		if r.stdout != "" {
			t.Errorf("%v: unexpected stdout %q", tc.args, r.stdout)
		}
	}
}

func TestUnreachableMasterExit3(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	env := append([]string{}, l.env...)
	env[0] = "ODUFLOW_SALT_MASTER=tcp://127.0.0.1:1" // nothing listens on port 1
	r := run(t, env, "ping", l.minion)
	must(t, r, 3)
	if !strings.Contains(oneLine(t, r.stderr), "cannot reach the master") {
		t.Fatalf("stderr %q", r.stderr)
	}
	r = run(t, env, "start", "configure", l.minion)
	must(t, r, 3)
	r = run(t, []string{"ODUFLOW_SALT_EVENTS=unix://" + filepath.Join(t.TempDir(), "none.ipc")}, "events")
	must(t, r, 3)
	if !strings.Contains(oneLine(t, r.stderr), "cannot read the event bus") {
		t.Fatalf("events: %s", r)
	}
}

func TestPing(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	r := run(t, l.env, "ping", l.minion)
	must(t, r, 0)
	want := `{"minion_id":"` + l.minion + `","key_accepted":true,"reachable":true,"protocol":1,"pillar_ready":true,"proof":true,"fencing":true,"runtime_guard":true,` +
		`"runtime_guard_forms":{"salt.state.State.call_parallel":"3006.0-3006.9, 3007.0-3007.1"},"profile_table":true,"ready":true}`
	if got := oneLine(t, r.stdout); got != want {
		t.Fatalf("ping: got %s, want %s", got, want)
	}
	// A well-formed id the master does not know: answered, not ready.
	r = run(t, l.env, "ping", "client-"+receipt.NewRequestID())
	must(t, r, 1)
	if !strings.Contains(r.stdout, `"key_accepted":false`) {
		t.Fatalf("unknown minion: %s", r)
	}
	// Text output.
	r = run(t, l.env, "--output", "text", "ping", l.minion)
	must(t, r, 0)
	if !strings.Contains(r.stdout, "ready         true") {
		t.Fatalf("text: %s", r)
	}
}

func TestStartWithoutWaitGoesOnAfterTheCLIExits(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	req := receipt.NewRequestID()
	r := run(t, l.env, "start", "configure", l.minion, req)
	must(t, r, 0)
	got := response(t, oneLine(t, r.stdout))
	if got["request_id"] != req || got["minion_id"] != l.minion {
		t.Fatalf("start: %s", r.stdout)
	}
	if got["status"] != "running" && got["status"] != "succeeded" {
		t.Fatalf("start: status %v", got["status"])
	}
	jid, _ := got["jid"].(string)
	if receipt.ValidateJID(jid) != nil {
		t.Fatalf("start: jid %v", got["jid"])
	}
	// The CLI has exited; the detached worker finishes the request. A later status says so.
	testwait.Until(t, "still not succeeded", 15*time.Second, func() bool {
		r = run(t, l.env, "status", "configure", l.minion, req)
		return response(t, oneLine(t, r.stdout))["status"] == "succeeded"
	})
	must(t, r, 0)
	if s := response(t, oneLine(t, r.stdout)); s["jid"] != jid || s["passed"] != 3.0 || s["total"] != 3.0 {
		t.Fatalf("status: %s", r.stdout)
	}
	if n := l.sim.PublicationCount("oduflow_job.run", ""); n != 1 {
		t.Fatalf("oduflow_job.run published %d times", n)
	}
	// Starting the same request again returns the same JID without publishing.
	r = run(t, l.env, "start", "configure", l.minion, req)
	must(t, r, 0)
	if s := response(t, oneLine(t, r.stdout)); s["jid"] != jid || s["status"] != "succeeded" {
		t.Fatalf("repeat: %s", r.stdout)
	}
	if n := l.sim.PublicationCount("oduflow_job.run", ""); n != 1 {
		t.Fatalf("repeat published again: %d", n)
	}
	// The request id is bound to configure: production refuses it as bad input.
	r = run(t, l.env, "status", "production", l.minion, req)
	must(t, r, 2)
}

func TestStartWaitProductionFails(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	r := run(t, l.env, "start", "production", l.minion, "--wait", "--interval", "100ms")
	must(t, r, 1)
	got := response(t, oneLine(t, r.stdout))
	if got["status"] != "failed" || got["passed"] != 2.0 || got["total"] != 3.0 {
		t.Fatalf("production: %s", r.stdout)
	}
	// Not a terminal: plain progress lines, no carriage returns.
	if strings.Contains(r.stderr, "\r") || !strings.Contains(r.stderr, "failed") {
		t.Fatalf("progress: %q", r.stderr)
	}
	r = run(t, l.env, "--output", "text", "start", "configure", l.minion, "--wait", "--interval", "100ms")
	must(t, r, 0)
	if !strings.Contains(r.stdout, "status      succeeded") || !strings.Contains(r.stdout, "passed      3 of 3") {
		t.Fatalf("text: %s", r)
	}
}

func TestStatusNotStartedHasNullJID(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	req := receipt.NewRequestID()
	must(t, run(t, l.env, "init"), 0) // status never creates the claim store
	r := run(t, l.env, "status", "production", l.minion, req)
	must(t, r, 0)
	want := `{"minion_id":"` + l.minion + `","request_id":"` + req + `","jid":null,"status":"not_started","passed":0,"total":0,"error_code":""}`
	if got := oneLine(t, r.stdout); got != want {
		t.Fatalf("got %s\nwant %s", got, want)
	}
}

func TestReconcileRefusesARequestThatIsNotUnknown(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	req := receipt.NewRequestID()
	r := run(t, l.env, "reconcile", l.minion, req, "--from-minion")
	if r.code == 0 || !strings.Contains(oneLine(t, r.stderr), "reconcile") {
		t.Fatalf("reconcile of a request without claim: %s", r)
	}
}

func TestEauthTokenPath(t *testing.T) {
	t.Parallel()
	l := newLab(t, salttest.WithEauthUser("file", "oduflow", "s3cret-pass",
		[]salttest.ACLEntry{salttest.AllowOn("client-*", "oduflow_job.*", "test.ping")}))
	env := []string{l.env[0], l.env[1], l.env[3], "ODUFLOW_SALT_EAUTH=file", "ODUFLOW_SALT_USER=oduflow",
		"ODUFLOW_SALT_PASSWORD=s3cret-pass"}
	r := run(t, env, "start", "configure", l.minion, "--wait", "--interval", "100ms")
	must(t, r, 0)
	if s := response(t, oneLine(t, r.stdout)); s["status"] != "succeeded" {
		t.Fatalf("eauth: %s", r)
	}
	for _, p := range l.sim.Publications() {
		if p.User != "oduflow" {
			t.Fatalf("publication by %q", p.User)
		}
	}
	if strings.Contains(r.stdout+r.stderr, "s3cret-pass") {
		t.Fatal("password printed")
	}
	// A wrong password is reported, in one line, without the password.
	env[len(env)-1] = "ODUFLOW_SALT_PASSWORD=wrong-pass"
	r = run(t, env, "ping", l.minion)
	if r.code == 0 || strings.Contains(r.stderr, "wrong-pass") {
		t.Fatalf("wrong password: %s", r)
	}
}

func TestModule(t *testing.T) {
	t.Parallel()
	r := run(t, nil, "module")
	must(t, r, 0)
	if r.stdout != string(receipt.MinionModule().Source) {
		t.Fatal("module output differs from receipt.MinionModule().Source")
	}
	dir := t.TempDir()
	r = run(t, nil, "module", "--install", dir)
	must(t, r, 0)
	st, err := os.Stat(filepath.Join(dir, "oduflow_job.py"))
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o644 {
		t.Fatalf("mode %v", st.Mode())
	}
	if !strings.Contains(r.stdout, `"sha256":"`) {
		t.Fatalf("install: %s", r)
	}
}
