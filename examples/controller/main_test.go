package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/oduflow/oduflow-go/examples/internal/oduflowenv"
	"github.com/oduflow/oduflow-go/internal/testwait"
	"github.com/oduflow/oduflow-go/oduflow"
	"github.com/oduflow/oduflow-go/oduflow/claims"
	"github.com/oduflow/oduflow-go/oduflow/filestore"
	"github.com/oduflow/oduflow-go/oduflow/oduflowtest/fakeminion"
	"github.com/oduflow/oduflow-go/receipt"
	"github.com/oduflow/oduflow-go/salt/salttest"
)

// childEnv marks this test binary, re-executed, as the controller itself (the os.Args[0] pattern): the
// drain test runs real controller processes and sends them real signals.
const childEnv = "ODUFLOW_CONTROLLER_TEST_CHILD"

// childNoFile is the child's RLIMIT_NOFILE, when set (the flood test).
const childNoFile = "ODUFLOW_CONTROLLER_TEST_NOFILE"

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "1" {
		if n, err := strconv.ParseUint(os.Getenv(childNoFile), 10, 64); err == nil {
			// The flood test's small descriptor limit, set in the controller process itself.
			rl := syscall.Rlimit{Cur: n, Max: n}
			if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
				panic(err)
			}
		}
		main()
		return
	}
	os.Exit(m.Run())
}

func TestConfigurationRefusedBeforeAnythingStarts(t *testing.T) {
	t.Parallel()
	base := map[string]string{"ODUFLOW_SALT_MASTER": "tcp://127.0.0.1:1", "ODUFLOW_SALT_EVENTS": "tcp://127.0.0.1:2",
		"ODUFLOW_SALT_KEY_FILE": "/nonexistent/.root_key", "ODUFLOW_STATE_DIR": filepath.Join(t.TempDir(), "claims")}
	for _, tc := range []struct {
		name string
		set  map[string]string
		want string
	}{
		{"malformed listen", map[string]string{"ODUFLOW_LISTEN": "8080"}, `ODUFLOW_LISTEN "8080": want host:port, e.g. 127.0.0.1:8080`},
		{"listen port", map[string]string{"ODUFLOW_LISTEN": "127.0.0.1:99999"}, `port "99999": want 0-65535`},
		{"listen URL", map[string]string{"ODUFLOW_LISTEN": "http://x:80"}, "ODUFLOW_LISTEN"},
		{"drain timeout", map[string]string{"ODUFLOW_DRAIN_TIMEOUT": "soon"}, `ODUFLOW_DRAIN_TIMEOUT "soon": want a positive Go duration`},
		{"no master", map[string]string{"ODUFLOW_SALT_MASTER": ""}, "controller: missing ODUFLOW_SALT_MASTER"},
		{"bad events", map[string]string{"ODUFLOW_SALT_EVENTS": "/run/x.ipc"}, `controller: ODUFLOW_SALT_EVENTS "/run/x.ipc": want unix:///path or tcp://host:port`},
		{"no credentials", map[string]string{"ODUFLOW_SALT_KEY_FILE": ""}, "controller: no credentials"},
		{"claims scheme", map[string]string{"ODUFLOW_CLAIMS": "s3://bucket"}, `unknown scheme "s3"`},
		{"etcd settings", map[string]string{"ODUFLOW_CLAIMS": "etcd://127.0.0.1:2379/p", "ODUFLOW_ETCD_PASSWORD": "pw"}, "ODUFLOW_ETCD_PASSWORD needs ODUFLOW_ETCD_USER"},
		{"log format", map[string]string{"ODUFLOW_LOG_FORMAT": "xml"}, `ODUFLOW_LOG_FORMAT "xml": want text or json`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := map[string]string{"ODUFLOW_LISTEN": "127.0.0.1:0", "ODUFLOW_INSECURE_NO_AUTH": "1"}
			for k, v := range base {
				env[k] = v
			}
			for k, v := range tc.set {
				env[k] = v
			}
			var stderr bytes.Buffer
			code := run(context.Background(), func(k string) string { return env[k] }, &stderr)
			// The text handler quotes the message: compare its unquoted form.
			if code != 2 || !strings.Contains(strings.ReplaceAll(stderr.String(), `\"`, `"`), tc.want) || strings.Count(strings.TrimSpace(stderr.String()), "\n") != 0 {
				t.Fatalf("exit %d, stderr %q; want 2 and one line with %q", code, stderr.String(), tc.want)
			}
			if strings.Contains(stderr.String(), "pw") {
				t.Fatalf("a password in the log: %q", stderr.String())
			}
		})
	}
}

func TestUsage(t *testing.T) {
	t.Parallel()
	var out, errb bytes.Buffer
	if code := usage([]string{"--help"}, &out, &errb); code != 0 || !strings.Contains(out.String(), "ODUFLOW_LISTEN") {
		t.Fatalf("--help: %d %q", code, out.String())
	}
	if code := usage([]string{"--listen=:80"}, &out, &errb); code != 2 || !strings.Contains(errb.String(), `unexpected argument "--listen=:80"`) {
		t.Fatalf("an argument: %d %q", code, errb.String())
	}
}

// A replica SIGTERMed while its requests run exits 0 within its drain timeout and leaves them adoptable;
// a second replica on the same claim store adopts them, follows them through the minions' receipts to
// succeeded without publishing them again, and nothing stays unresolved.
func TestSIGTERMDrainLeavesRequestsAdoptable(t *testing.T) {
	// Not parallel: it bounds the drain (5 s) of a child process under SIGTERM.
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "master"), 0o700); err != nil {
		t.Fatal(err)
	}
	sim, err := salttest.Start(context.Background(), salttest.WithDir(filepath.Join(dir, "master")))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sim.Close() })
	const n = 4
	var minions []*fakeminion.Model
	// Each minion says when a run reaches it and when its receipt is written: the test waits on that.
	published, finished := make(chan string, 4*n), make(chan string, 4*n)
	for range n {
		m := fakeminion.NewModel("client-"+uuid.NewString(), fakeminion.WithDelay(1500*time.Millisecond),
			fakeminion.WithResult(receipt.ProfileConfigure, fakeminion.Result{Status: receipt.StatusSucceeded, Passed: 3, Total: 3}))
		if err := sim.AcceptMinionKey(m.ID(), m.PublicKeyPEM()); err != nil {
			t.Fatal(err)
		}
		sim.AddMinion(m.ID(), func(ctx context.Context, job salttest.Job) (any, int) {
			if job.Fun != "oduflow_job.run" {
				return m.Handle(ctx, job)
			}
			published <- m.ID()
			defer func() { finished <- m.ID() }()
			return m.Handle(ctx, job)
		})
		minions = append(minions, m)
	}
	claimDir := filepath.Join(dir, "claims")
	var bindings strings.Builder
	for _, m := range minions {
		bindings.WriteString(m.ID() + " acme\n")
	}
	clients := filepath.Join(dir, "clients")
	if err := os.WriteFile(clients, []byte(bindings.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	env := []string{"ODUFLOW_CLIENTS=" + clients, "ODUFLOW_SALT_MASTER=" + sim.Addr(), "ODUFLOW_SALT_EVENTS=" + sim.EventsAddr(),
		"ODUFLOW_SALT_KEY_FILE=" + sim.KeyFile(), "ODUFLOW_SALT_PKI_DIR=" + sim.PKIDir(), "ODUFLOW_STATE_DIR=" + claimDir,
		"ODUFLOW_DRAIN_TIMEOUT=100ms", "ODUFLOW_INSECURE_NO_AUTH=1"}

	a := startChild(t, "A", env)
	requests := make([]string, n)
	for i, m := range minions {
		var r oduflow.Response
		if code := a.call(t, "POST", "/v1/requests/configure/"+m.ID(), &r); code != http.StatusCreated {
			t.Fatalf("start: %d %+v", code, r)
		}
		requests[i] = r.RequestID
	}
	// Every run published (the minions are applying), then SIGTERM.
	receive(t, published, n, 10*time.Second, "every run published")
	t0 := time.Now()
	if code := a.stop(t); code != 0 {
		t.Fatalf("replica A exit status %d after SIGTERM, want 0; log:\n%s", code, a.log())
	}
	if took := time.Since(t0); took > 5*time.Second {
		t.Fatalf("the drain took %v with a 100ms timeout", took)
	}
	if !strings.Contains(a.log(), "released for adoption") {
		t.Fatalf("replica A cut nothing (the runs take 1.5 s):\n%s", a.log())
	}
	// Left unfinished in the claim store: not final yet, no lock held.
	store, err := filestore.Open(claimDir)
	if err != nil {
		t.Fatal(err)
	}
	// The service stores a caller's request id under its client-scoped key.
	for i, id := range requests {
		c, err := store.Get(context.Background(), oduflowenv.ScopedRequestID(minions[i].ID(), id))
		if err != nil {
			t.Fatal(err)
		}
		if c.Phase != claims.PhaseDispatched {
			t.Fatalf("request %s not left dispatched (adoptable): %+v", id, c)
		}
	}
	// The minions finish their runs while no replica runs; then replica B adopts.
	receive(t, finished, n, 10*time.Second, "every receipt written")
	for i, m := range minions {
		if _, ok := m.Receipt(oduflowenv.ScopedRequestID(m.ID(), requests[i])); !ok {
			t.Fatalf("minion %s ended its run without a receipt", m.ID())
		}
	}
	b := startChild(t, "B", env)
	for i, m := range minions {
		// The status stream ends with the final status (no polling).
		if r := b.finalStatus(t, "/v1/requests/configure/"+m.ID()+"/"+requests[i]+"/events"); r.Status != receipt.StatusSucceeded || r.Passed != 3 {
			t.Fatalf("adopted request %s: %+v, want succeeded 3", requests[i], r)
		}
		if runs := m.Calls("oduflow_job.run"); runs != 1 {
			t.Fatalf("minion %s: oduflow_job.run published %d times, want 1", m.ID(), runs)
		}
	}
	var un struct {
		Unresolved []json.RawMessage `json:"unresolved"`
	}
	if code := b.call(t, "GET", "/v1/unresolved", &un); code != http.StatusOK || len(un.Unresolved) != 0 {
		t.Fatalf("unresolved after adoption: %d %s", code, un.Unresolved)
	}
	waitFor(t, 5*time.Second, "adoptions counted", func() bool {
		return strings.Contains(b.metrics(t), fmt.Sprintf("oduflow_adoptions_total %d", n))
	})
	if code := b.stop(t); code != 0 {
		t.Fatalf("replica B exit status %d, want 0; log:\n%s", code, b.log())
	}
}

// child is a controller process (this test binary re-executed).
type child struct {
	cmd     *exec.Cmd
	addr    string
	mu      sync.Mutex
	stderr  bytes.Buffer
	done    chan struct{}
	serving chan struct{} // closed when the child logs "serving" (its listener is up)
	served  bool
}

func (c *child) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n, err := c.stderr.Write(p)
	if !c.served && (bytes.Contains(c.stderr.Bytes(), []byte("msg=serving")) || bytes.Contains(c.stderr.Bytes(), []byte(`"msg":"serving"`))) {
		c.served = true
		close(c.serving)
	}
	return n, err
}

func (c *child) log() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stderr.String()
}

func startChild(t *testing.T, name string, env []string) *child {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	c := &child{addr: addr, done: make(chan struct{}), serving: make(chan struct{})}
	c.cmd = exec.Command(os.Args[0]) // no arguments: TestMain runs main
	c.cmd.Env = append(append(os.Environ(), childEnv+"=1", "ODUFLOW_LISTEN="+addr), env...)
	c.cmd.Stdout, c.cmd.Stderr = c, c
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = c.cmd.Wait(); close(c.done) }()
	t.Cleanup(func() {
		select {
		case <-c.done:
		default:
			_ = c.cmd.Process.Kill()
			<-c.done
		}
		if t.Failed() {
			t.Logf("replica %s log:\n%s", name, c.log())
		}
	})
	// Ready once it serves: its log says so (the Dispatcher and the claim store are open by then), and
	// its readiness check answers 200.
	select {
	case <-c.serving:
	case <-c.done:
		t.Fatalf("replica %s exited before serving:\n%s", name, c.log())
	case <-time.After(15 * time.Second):
		t.Fatalf("replica %s not serving after 15 s:\n%s", name, c.log())
	}
	resp, err := http.Get("http://" + addr + "/readyz")
	if err != nil {
		t.Fatalf("replica %s: readyz: %v", name, err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("replica %s serving but readyz answers %d:\n%s", name, resp.StatusCode, c.log())
	}
	return c
}

// stop sends SIGTERM and returns the exit status.
func (c *child) stop(t *testing.T) int {
	t.Helper()
	if err := c.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-c.done:
	case <-time.After(30 * time.Second):
		t.Fatal("no exit 30 s after SIGTERM")
	}
	return c.cmd.ProcessState.ExitCode()
}

func (c *child) call(t *testing.T, method, path string, out any) int {
	t.Helper()
	req, err := http.NewRequest(method, "http://"+c.addr+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatalf("%s %s: %d %q", method, path, resp.StatusCode, b)
	}
	return resp.StatusCode
}

func (c *child) metrics(t *testing.T) string {
	t.Helper()
	resp, err := http.Get("http://" + c.addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// receive takes values from ch until n distinct ones came, within limit.
func receive(t *testing.T, ch <-chan string, n int, limit time.Duration, what string) {
	t.Helper()
	deadline := time.After(limit)
	for seen := map[string]bool{}; len(seen) < n; {
		select {
		case v := <-ch:
			seen[v] = true
		case <-deadline:
			t.Fatalf("timed out waiting: %s", what)
		}
	}
}

// finalStatus reads a status event stream (GET …/events) to its end and returns its last status.
func (c *child) finalStatus(t *testing.T, path string) oduflow.Response {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", "http://"+c.addr+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var last oduflow.Response
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			if err := json.Unmarshal([]byte(data), &last); err != nil {
				t.Fatalf("%s: event %q: %v", path, data, err)
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("%s: the stream ended with %v (last %+v)", path, err, last)
	}
	return last
}

// waitFor polls ok until it holds: only for what no event reports across the process boundary (a
// counter the child increments just after the commit its status stream reports).
func waitFor(t *testing.T, limit time.Duration, what string, ok func() bool) {
	t.Helper()
	testwait.Until(t, what, limit, ok)
}
