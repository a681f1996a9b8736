package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/oduflow/oduflow-go/examples/oduflowctl/internal/cli"
	"github.com/oduflow/oduflow-go/internal/testwait"
	"github.com/oduflow/oduflow-go/oduflow/catalog"
	"github.com/oduflow/oduflow-go/oduflow/claims"
	"github.com/oduflow/oduflow-go/oduflow/filestore"
	"github.com/oduflow/oduflow-go/oduflow/oduflowtest/fakeminion"
	"github.com/oduflow/oduflow-go/receipt"
	"github.com/oduflow/oduflow-go/salt/salttest"
)

// End-to-end checks of every exit status, against the simulator, through the built binary.

const (
	ExitOK           = cli.ExitOK
	ExitFailed       = cli.ExitFailed
	ExitUsage        = cli.ExitUsage
	ExitUnreachable  = cli.ExitUnreachable
	ExitRefused      = cli.ExitRefused
	ExitUnknown      = cli.ExitUnknown
	ExitDamaged      = cli.ExitDamaged
	ExitStillRunning = cli.ExitStillRunning
)

// newLabMinion is newLab with a Go-model minion built with mopts and the simulator with simOpts.
func newLabMinion(t *testing.T, simOpts []salttest.Option, mopts ...fakeminion.ModelOption) *lab {
	t.Helper()
	sim, err := salttest.Start(context.Background(), append([]salttest.Option{salttest.WithDir(t.TempDir())}, simOpts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sim.Close() })
	l := &lab{sim: sim, minion: "client-" + receipt.NewRequestID()}
	m := fakeminion.NewModel(l.minion, append([]fakeminion.ModelOption{
		fakeminion.WithResult(receipt.ProfileConfigure, fakeminion.Result{Status: receipt.StatusSucceeded, Passed: 3, Total: 3}),
		fakeminion.WithResult(receipt.ProfileProduction, fakeminion.Result{Status: receipt.StatusFailed, Passed: 2, Total: 3}),
	}, mopts...)...)
	if err := fakeminion.Add(sim, m); err != nil {
		t.Fatal(err)
	}
	l.env = []string{
		"ODUFLOW_SALT_PKI_DIR=" + sim.PKIDir(),
		"ODUFLOW_SALT_MASTER=" + sim.Addr(),
		"ODUFLOW_SALT_EVENTS=" + sim.EventsAddr(),
		"ODUFLOW_SALT_KEY_FILE=" + sim.KeyFile(),
		"ODUFLOW_STATE_DIR=" + filepath.Join(stateRoot(t), "claims"),
	}
	return l
}

// stateRoot is a temporary directory for a claim store that a detached worker may still write to when
// the test ends (TestMain ends leftover workers only after every test): removed best effort, so a
// worker's late write cannot fail the test's cleanup the way t.TempDir's strict removal does.
func stateRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "oduflowctl-state-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}

// withEnv returns env with each KEY=VALUE of set replacing (or adding) that key.
func withEnv(env []string, set ...string) []string {
	out := append([]string{}, env...)
	for _, kv := range set {
		key := kv[:strings.IndexByte(kv, '=')+1]
		replaced := false
		for i := range out {
			if strings.HasPrefix(out[i], key) {
				out[i], replaced = kv, true
			}
		}
		if !replaced {
			out = append(out, kv)
		}
	}
	return out
}

// withoutEnv returns env without the variable key.
func withoutEnv(env []string, key string) []string {
	var out []string
	for _, kv := range env {
		if !strings.HasPrefix(kv, key+"=") {
			out = append(out, kv)
		}
	}
	return out
}

// claimCount counts the claim records in a state directory (missing directory: 0).
func claimCount(t *testing.T, dir string) int {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	return len(m)
}

func TestExitSucceededFailedAndErrorCode(t *testing.T) {
	t.Parallel()
	l := newLabMinion(t, nil)
	must(t, run(t, l.env, "start", "configure", l.minion, "--wait", "--interval", "50ms"), ExitOK)
	r := run(t, l.env, "start", "production", l.minion, "--wait", "--interval", "50ms")
	must(t, r, ExitFailed)
	if s := response(t, oneLine(t, r.stdout)); s["status"] != "failed" || s["passed"] != 2.0 {
		t.Fatalf("production: %s", r)
	}
}

// A minion whose module's runtime guard fails: ping prints the module's reason and exits 1; start --wait
// ends failed runtime_guard_failed (exit 1), its stderr line naming the reason, nothing published.
func TestGuardFailureNamedByPingAndStart(t *testing.T) {
	t.Parallel()
	reason := "call_parallel: unexpected signature of salt.state.State.call_parallel"
	l := newLabMinion(t, nil, fakeminion.WithRuntimeGuardFailure(reason))
	p := run(t, l.env, "--output", "text", "ping", l.minion)
	must(t, p, ExitFailed)
	if !strings.Contains(p.stdout, "guard error   "+reason) || !strings.Contains(p.stdout, "runtime guard false") {
		t.Fatalf("ping does not name the guard's reason: %s", p)
	}
	pj := run(t, l.env, "ping", l.minion)
	must(t, pj, ExitFailed)
	var v map[string]any
	if err := json.Unmarshal([]byte(oneLine(t, pj.stdout)), &v); err != nil || v["runtime_guard_error"] != reason || v["ready"] != false {
		t.Fatalf("ping json (%v): %s", err, pj)
	}
	r := run(t, l.env, "start", "configure", l.minion, "--wait", "--interval", "50ms")
	must(t, r, ExitFailed)
	if s := response(t, oneLine(t, r.stdout)); s["status"] != "failed" || s["error_code"] != string(claims.CodeRuntimeGuard) {
		t.Fatalf("start: %s", r)
	}
	if !strings.Contains(r.stderr, "error code runtime_guard_failed (the minion module's guard: "+reason+")") {
		t.Fatalf("start does not name the guard's reason: %s", r)
	}
	if n := l.sim.PublicationCount("oduflow_job.run", ""); n != 0 {
		t.Fatalf("published %d", n)
	}
}

// A key the master rejects loads fine, so the claim is written; the preflight failure is recorded as
// publish_authentication, the CLI prints that code and exits 4.
func TestExitRefusedAfterClaimPrintsCode(t *testing.T) {
	t.Parallel()
	l := newLabMinion(t, nil)
	key := filepath.Join(t.TempDir(), ".root_key")
	if err := os.WriteFile(key, []byte(strings.Repeat("A", 75)+"="+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := run(t, withEnv(l.env, "ODUFLOW_SALT_KEY_FILE="+key), "start", "configure", l.minion, "--wait", "--interval", "50ms")
	must(t, r, ExitRefused)
	if !strings.Contains(r.stderr, "error code "+string(claims.CodeAuthentication)) {
		t.Fatalf("no error code printed: %s", r)
	}
	if n := l.sim.PublicationCount("oduflow_job.run", ""); n != 0 {
		t.Fatalf("published %d", n)
	}
}

// Bad configuration: exit 2, one line, and nothing written; the same request id starts once fixed.
func TestExitConfigurationWritesNothing(t *testing.T) {
	t.Parallel()
	l := newLabMinion(t, nil)
	state := stateDir(l.env)
	file := filepath.Join(t.TempDir(), "a-file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	loose := filepath.Join(t.TempDir(), ".root_key")
	data, err := os.ReadFile(l.sim.KeyFile())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(loose, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(loose, 0o644); err != nil {
		t.Fatal(err)
	}
	req := receipt.NewRequestID()
	for _, tc := range []struct {
		name string
		env  []string
		args []string
		want string
	}{
		{"master without port", withEnv(l.env, "ODUFLOW_SALT_MASTER=tcp://nohost"), nil, "--master"},
		{"empty state dir", withEnv(l.env, "ODUFLOW_STATE_DIR="), []string{"--state-dir", ""}, "empty claim store"},
		{"state dir is a file", withEnv(l.env, "ODUFLOW_STATE_DIR="+file), nil, "not a directory"},
		{"missing key file", withEnv(l.env, "ODUFLOW_SALT_KEY_FILE="+filepath.Join(t.TempDir(), ".root_key")), nil, ""},
		{"key file 0644", withEnv(l.env, "ODUFLOW_SALT_KEY_FILE="+loose), nil, "unsafe permissions"},
		{"etcd URL with credentials", withEnv(l.env, "ODUFLOW_CLAIMS=etcd://u:s3cret@127.0.0.1:2379/p"), nil, "credentials in the URL"},
		{"etcd TLS files without etcds", withEnv(l.env, "ODUFLOW_CLAIMS=etcd://127.0.0.1:2379/p", "ODUFLOW_ETCD_CACERT=/ca.pem"), nil, "need --claims etcds://"},
	} {
		args := append(append([]string{}, tc.args...), "start", "configure", l.minion, req)
		r := run(t, tc.env, args...)
		if r.code != ExitUsage || !strings.Contains(oneLine(t, r.stderr), tc.want) {
			t.Errorf("%s: want exit 2 with %q: %s", tc.name, tc.want, r)
		}
		if n := claimCount(t, state); n != 0 {
			t.Fatalf("%s: %d claims written", tc.name, n)
		}
	}
	// A bad catalog directory for custom start.
	src := filepath.Join(t.TempDir(), "motd.yaml")
	if err := os.WriteFile(src, []byte("motd:\n  file.managed:\n    - name: /etc/motd\n    - contents: hi\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := run(t, withEnv(l.env, "ODUFLOW_CATALOG_DIR="+file), "custom", "start", l.minion, src)
	must(t, r, ExitUsage)
	must(t, run(t, l.env, "start", "configure", l.minion, req, "--wait", "--interval", "50ms"), ExitOK)
	if n := l.sim.PublicationCount("oduflow_job.run", ""); n != 1 {
		t.Fatalf("runs %d", n)
	}
}

// A FIFO at worker.log is a configuration error found before the claim: exit 2 at once, nothing written.
func TestExitWorkerLogFIFOWritesNothing(t *testing.T) {
	t.Parallel()
	l := newLabMinion(t, nil)
	state := stateDir(l.env)
	if _, err := filestore.Open(state); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(state, "worker.log"), 0o600); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	r := run(t, l.env, "start", "configure", l.minion)
	must(t, r, ExitUsage)
	if !strings.Contains(r.stderr, "worker log") || time.Since(start) > 10*time.Second {
		t.Fatalf("fifo: %s after %s", r, time.Since(start))
	}
	if n := claimCount(t, state); n != 0 {
		t.Fatalf("%d claims written", n)
	}
}

// A missing event socket: exit 3, nothing written; the same request id starts once the socket is named.
func TestExitEventBusUnreachableWritesNothing(t *testing.T) {
	t.Parallel()
	l := newLabMinion(t, nil)
	req := receipt.NewRequestID()
	r := run(t, withEnv(l.env, "ODUFLOW_SALT_EVENTS=unix://"+filepath.Join(t.TempDir(), "none.ipc")), "start", "configure", l.minion, req)
	must(t, r, ExitUnreachable)
	if n := claimCount(t, stateDir(l.env)); n != 0 {
		t.Fatalf("%d claims written", n)
	}
	must(t, run(t, l.env, "start", "configure", l.minion, req, "--wait", "--interval", "50ms"), ExitOK)
}

// A wrong eauth password: exit 4, nothing written and nothing published (mk_token, not a publish); the
// right one then works with the same request id.
func TestExitWrongPasswordRefusedWritesNothing(t *testing.T) {
	t.Parallel()
	l := newLabMinion(t, []salttest.Option{salttest.WithEauthUser("pam", "ops", "right", salttest.LabACL())})
	env := append(withoutEnv(l.env, "ODUFLOW_SALT_KEY_FILE"), "ODUFLOW_SALT_EAUTH=pam", "ODUFLOW_SALT_USER=ops")
	req := receipt.NewRequestID()
	r := run(t, append(env, "ODUFLOW_SALT_PASSWORD=wrong"), "start", "configure", l.minion, req)
	must(t, r, ExitRefused)
	if n := claimCount(t, stateDir(l.env)); n != 0 || len(l.sim.Publications()) != 0 {
		t.Fatalf("claims %d publications %d", n, len(l.sim.Publications()))
	}
	must(t, run(t, append(env, "ODUFLOW_SALT_PASSWORD=right"), "start", "configure", l.minion, req, "--wait", "--interval", "50ms"), ExitOK)
}

func TestExitUnknownAndDamaged(t *testing.T) {
	t.Parallel()
	l := newLabMinion(t, nil)
	req := writeLostClaim(t, stateDir(l.env), l.minion)
	r := run(t, l.env, "status", "configure", l.minion, req)
	must(t, r, ExitUnknown)
	bad := receipt.NewRequestID()
	if err := os.WriteFile(filepath.Join(stateDir(l.env), bad+".json"), []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	r = run(t, l.env, "status", "configure", l.minion, bad)
	must(t, r, ExitDamaged)
	if !strings.Contains(oneLine(t, r.stderr), "damaged or missing claim store") {
		t.Fatalf("damaged: %s", r)
	}
}

func TestExitStillRunningAfterWaitTimeout(t *testing.T) {
	t.Parallel()
	l := newLabMinion(t, nil, fakeminion.WithDelay(4*time.Second))
	r := run(t, l.env, "start", "configure", l.minion, "--wait", "--interval", "50ms", "--timeout", "300ms")
	must(t, r, ExitStillRunning)
	if s := response(t, oneLine(t, r.stdout)); s["status"] != "running" {
		t.Fatalf("timed out: %s", r)
	}
}

// Concurrent `custom start` of one file from many processes: one definition, one publication; `--again`
// then follows that definition (it ran) and publishes once more.
func TestConcurrentCustomStartPublishesOnce(t *testing.T) {
	t.Parallel()
	l := newLabMinion(t, nil)
	must(t, run(t, l.env, "start", "configure", l.minion, "--wait", "--interval", "50ms"), ExitOK)
	file := filepath.Join(t.TempDir(), "motd.yaml")
	if err := os.WriteFile(file, []byte("motd:\n  file.managed:\n    - name: /etc/motd\n    - contents: hello\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	before := l.sim.PublicationCount("oduflow_job.run", "")
	const procs = 6
	results := make([]result, procs)
	var wg sync.WaitGroup
	for i := 0; i < procs; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			results[i] = run(t, l.env, "custom", "start", l.minion, file, "--wait", "--interval", "50ms")
		}(i)
	}
	wg.Wait()
	for i, r := range results {
		if r.code != ExitOK {
			t.Errorf("custom start %d: %s", i, r)
		}
	}
	if n := l.sim.PublicationCount("oduflow_job.run", "") - before; n != 1 {
		t.Fatalf("%d concurrent custom starts published %d times", procs, n)
	}
	cat, err := catalog.Open(stateDir(l.env) + "-catalog")
	if err != nil {
		t.Fatal(err)
	}
	defs, err := cat.Definitions(context.Background())
	if err != nil || len(defs) != 1 {
		t.Fatalf("definitions %d %v", len(defs), err)
	}
	r := run(t, l.env, "custom", "start", l.minion, file, "--again", "--wait", "--interval", "50ms")
	must(t, r, ExitOK)
	if n := l.sim.PublicationCount("oduflow_job.run", "") - before; n != 2 {
		t.Fatalf("--again: published %d in all: %s", n, r)
	}
}

// SIGTERM cancels the command's context: `start --wait` stops waiting at once and exits 7 (the request
// goes on in its detached worker).
func TestSIGTERMStopsTheCommand(t *testing.T) {
	t.Parallel()
	l := newLabMinion(t, nil, fakeminion.WithDelay(5*time.Second))
	errPath := filepath.Join(t.TempDir(), "stderr")
	cmd := exec.Command(binary, "start", "configure", l.minion, "--wait", "--interval", "50ms")
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}, l.env...)
	errF, err := os.Create(errPath)
	if err != nil {
		t.Fatal(err)
	}
	defer errF.Close()
	cmd.Stderr = errF
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() }) // a no-op once it exited
	testwait.Until(t, "never running", 10*time.Second, func() bool {
		b, _ := os.ReadFile(errPath)
		return strings.Contains(string(b), "running")
	})
	sent := time.Now()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	err = cmd.Wait()
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.ExitCode() != ExitStillRunning || time.Since(sent) > 3*time.Second {
		t.Fatalf("after SIGTERM: %v after %s", err, time.Since(sent))
	}
}

// A repeated start of an existing request answers from its claim while the master and the bus are down.
func TestRepeatedStartWhileMasterAndBusDown(t *testing.T) {
	t.Parallel()
	l := newLabMinion(t, nil)
	req := receipt.NewRequestID()
	must(t, run(t, l.env, "start", "configure", l.minion, req, "--wait", "--interval", "50ms"), ExitOK)
	down := withEnv(l.env, "ODUFLOW_SALT_MASTER=tcp://127.0.0.1:1",
		"ODUFLOW_SALT_EVENTS=unix://"+filepath.Join(t.TempDir(), "none.ipc"))
	r := run(t, down, "start", "configure", l.minion, req)
	must(t, r, ExitOK)
	if s := response(t, oneLine(t, r.stdout)); s["status"] != "succeeded" {
		t.Fatalf("repeat while down: %s", r)
	}
	must(t, run(t, down, "start", "configure", l.minion), ExitUnreachable) // a new request: nothing written
	if n := claimCount(t, stateDir(l.env)); n != 1 {
		t.Fatalf("claims %d", n)
	}
}

// TestReadCommandsNeverCreateTheStore: a command that only reads or follows claims, pointed at a claim
// store that does not exist (a mistyped --state-dir), exits 6 naming the path and creates nothing; it
// used to create an empty store and answer not_started with exit status 0, inviting a second run of
// something that ran. init (and start) create it; then status answers.
func TestReadCommandsNeverCreateTheStore(t *testing.T) {
	t.Parallel()
	l := newLabMinion(t, nil)
	missing := filepath.Join(t.TempDir(), "typo", "oduflow-apply")
	env := withEnv(l.env, "ODUFLOW_STATE_DIR="+missing)
	req := receipt.NewRequestID()
	for _, args := range [][]string{
		{"status", "configure", l.minion, req},
		{"resume", l.minion, req},
		{"reconcile", l.minion, req, "--from-minion"},
		{"custom", "status", l.minion, req},
	} {
		r := run(t, env, args...)
		must(t, r, ExitDamaged)
		if line := oneLine(t, r.stderr); !strings.Contains(line, "missing claim store") || !strings.Contains(line, missing) {
			t.Errorf("%v: stderr does not name the missing store: %s", args, line)
		}
		if _, err := os.Lstat(filepath.Dir(missing)); !os.IsNotExist(err) {
			t.Fatalf("%v created %s (%v)", args, filepath.Dir(missing), err)
		}
	}
	must(t, run(t, env, "init"), ExitOK)
	if st, err := os.Stat(missing); err != nil || st.Mode().Perm() != 0o700 {
		t.Fatalf("init: %v %v", st, err)
	}
	r := run(t, env, "status", "configure", l.minion, req)
	must(t, r, ExitOK)
	if !strings.Contains(r.stdout, `"not_started"`) {
		t.Fatalf("status after init: %s", r)
	}
}

// TestErrorClassesTable: every error a user meets first is in the class the README's exit table gives it,
// with its prefix once. Each row failed before: ping with the event bus unreachable exited 1 (failed) with
// "oduflow: ping: oduflow: subscribe to event bus"; a start on a minion the master does not know ended
// capability_unverified; status on a mistyped state dir answered not_started with exit 0.
func TestErrorClassesTable(t *testing.T) {
	t.Parallel()
	l := newLabMinion(t, nil)
	noBus := withEnv(l.env, "ODUFLOW_SALT_EVENTS=unix://"+filepath.Join(t.TempDir(), "none.ipc"))
	noMaster := withEnv(l.env, "ODUFLOW_SALT_MASTER=tcp://127.0.0.1:1")
	unknown := "client-" + receipt.NewRequestID() // no key on the master
	badKey := filepath.Join(t.TempDir(), ".root_key")
	if err := os.WriteFile(badKey, []byte("not a key"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		env    []string
		args   []string
		exit   int
		stderr string // a part of stderr's first line
		stdout string // a part of stdout
	}{
		{"ping, event bus unreachable", noBus, []string{"ping", l.minion}, ExitUnreachable, "cannot reach the master, event bus", ""},
		{"ping, master unreachable", noMaster, []string{"ping", l.minion}, ExitUnreachable, "cannot reach", ""},
		{"ping, key not accepted", l.env, []string{"ping", unknown}, ExitFailed, "", `"key_accepted":false`},
		{"start, key not accepted", l.env, []string{"start", "configure", unknown, "--wait", "--interval", "50ms"}, ExitFailed, "publish_no_minions", ""},
		{"start, malformed key file", withEnv(l.env, "ODUFLOW_SALT_KEY_FILE="+badKey), []string{"start", "configure", l.minion}, ExitUsage, "key", ""},
		{"status, missing store", withEnv(l.env, "ODUFLOW_STATE_DIR="+filepath.Join(t.TempDir(), "typo")), []string{"status", "configure", l.minion, receipt.NewRequestID()}, ExitDamaged, "missing claim store", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := run(t, tc.env, tc.args...)
			must(t, r, tc.exit)
			lines := strings.Split(strings.TrimRight(r.stderr, "\n"), "\n")
			line := lines[len(lines)-1] // --wait prints its progress first
			if !strings.Contains(line, tc.stderr) || !strings.Contains(r.stdout, tc.stdout) {
				t.Fatalf("want stderr ~ %q, stdout ~ %q; got %s", tc.stderr, tc.stdout, r)
			}
			if strings.Count(line, "oduflow:") > 1 {
				t.Errorf("a prefix repeats: %s", line)
			}
		})
	}
}
