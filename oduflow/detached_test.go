package oduflow

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/google/uuid"

	"github.com/oduflow/oduflow-go/oduflow/claims"
	"github.com/oduflow/oduflow-go/oduflow/oduflowtest/fakeminion"
	"github.com/oduflow/oduflow-go/receipt"
	"github.com/oduflow/oduflow-go/salt"
)

const envWorkerExe = "ODUFLOW_TEST_WORKER_EXE" // launcher child: the detached worker executable

// noopWorker is a "worker" executable that starts fine and does nothing: the claim stays claimed.
func noopWorker(t testing.TB) string {
	t.Helper()
	p, err := exec.LookPath("true")
	if err != nil {
		t.Skip("no true(1) executable")
	}
	return p
}

// scriptWorker writes a shell "worker" that writes one line to stderr and one to stdout, then sleeps.
func scriptWorker(t testing.TB, sleep int) string {
	t.Helper()
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh")
	}
	p := filepath.Join(t.TempDir(), "worker.sh")
	body := fmt.Sprintf("#!/bin/sh\necho \"worker-stderr $1 $2\" >&2\necho worker-stdout\nexec sleep %d\n", sleep)
	if err := os.WriteFile(p, []byte(body), 0o700); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestDetachedLaunchFailureFailsClaim(t *testing.T) {
	t.Parallel()
	e := startSim(t)
	m := e.addMinion()
	d := e.dispatcher(WithDetachedWorkers("/nonexistent/never-started"))
	ctx := context.Background()
	req := uuid.NewString()
	r, err := d.Start(ctx, m.ID(), req, receipt.ProfileConfigure)
	var le *WorkerLaunchError
	if !errors.Is(err, ErrWorkerLaunch) || !errors.As(err, &le) || le.RequestID != req {
		t.Fatalf("launch error: %v", err)
	}
	wantOneLine(t, "ErrWorkerLaunch", err)
	if r.Status != receipt.StatusFailed || r.Passed != 0 || r.Total != 1 || r.JID == nil || r.RequestID != req {
		t.Fatalf("response %+v", r)
	}
	c := mustClaim(t, d, req)
	if c.Phase != claims.PhaseTerminal || c.ErrorCode != claims.CodeWorkerLaunch || c.Evidence != evidencePreflight ||
		c.Quarantining() || c.WasDispatched() {
		t.Fatalf("%+v", c)
	}
	// Failed at once, not unknown after the launch grace; a repeat answers without launching.
	if again, err := d.Start(ctx, m.ID(), req, receipt.ProfileConfigure); err != nil || again.Status != receipt.StatusFailed {
		t.Fatalf("repeat: %+v %v", again, err)
	}
	if e.runs() != 0 || m.Calls(funCapabilities) != 0 {
		t.Fatal("published")
	}
	// A worker log that cannot be opened safely (group-readable directory) is a launch failure too.
	open := filepath.Join(t.TempDir(), "open")
	if err := os.Mkdir(open, 0o755); err != nil {
		t.Fatal(err)
	}
	d2 := e.dispatcher(WithDetachedWorkers(noopWorker(t)), detachedLog(filepath.Join(open, workerLogName)))
	req2 := uuid.NewString()
	if _, err := d2.Start(ctx, m.ID(), req2, receipt.ProfileConfigure); !errors.Is(err, ErrWorkerLaunch) {
		t.Fatalf("unsafe log: %v", err)
	}
	if c := mustClaim(t, d2, req2); c.ErrorCode != claims.CodeWorkerLaunch || c.Status != receipt.StatusFailed {
		t.Fatalf("%+v", c)
	}
}

func TestDetachedLogFile(t *testing.T) {
	t.Parallel()
	e := startSim(t)
	m := e.addMinion()
	logPath := filepath.Join(e.dir, workerLogName)
	d := e.dispatcher(WithDetachedWorkers(scriptWorker(t, 0)), detachedLog(logPath))
	req := uuid.NewString()
	if _, err := d.Start(context.Background(), m.ID(), req, receipt.ProfileConfigure); err != nil {
		t.Fatal(err)
	}
	want := "worker-stderr " + m.ID() + " " + req
	var data []byte
	if !waitUntil(10*time.Second, func() bool {
		data, _ = os.ReadFile(logPath)
		return strings.Contains(string(data), want) && strings.Contains(string(data), "worker-stdout")
	}) {
		t.Fatalf("log %q", data)
	}
	if fi, err := os.Lstat(logPath); err != nil || fi.Mode().Perm() != 0o600 || !fi.Mode().IsRegular() {
		t.Fatalf("log file %v %v", fi.Mode(), err)
	}
	// A symlink in place of the log is refused (launch failure), never followed.
	link := filepath.Join(e.dir, "link.log")
	if err := os.Symlink(logPath, link); err != nil {
		t.Fatal(err)
	}
	d2 := e.dispatcher(WithDetachedWorkers(noopWorker(t)), detachedLog(link))
	if _, err := d2.Start(context.Background(), m.ID(), uuid.NewString(), receipt.ProfileConfigure); !errors.Is(err, ErrWorkerLaunch) {
		t.Fatalf("symlinked log: %v", err)
	}
}

// stubNet is a Publisher/EventSource for the launcher child: Start of a detached worker publishes
// nothing; its readiness check needs a live (idle) subscription.
type stubNet struct{}

func (stubNet) Publish(context.Context, salt.PublishRequest) (*salt.PublishResult, error) {
	return nil, salt.ErrNotSent
}

func (stubNet) Subscribe(context.Context) (Subscription, error) {
	return &idleSub{ch: make(chan salt.Event)}, nil
}

// idleSub is a connected subscription on which nothing happens.
type idleSub struct {
	once sync.Once
	ch   chan salt.Event
}

func (s *idleSub) Events() <-chan salt.Event { return s.ch }

func (s *idleSub) Close() error { s.once.Do(func() { close(s.ch) }); return nil }

// runLauncherChild: Start one request with a detached worker, print "launched", exit.
func runLauncherChild() int {
	d, err := New(stubNet{}, stubNet{}, WithClaimDir(os.Getenv(envClaimDir)), WithLogger(quietLogger()),
		WithDetachedWorkers(os.Getenv(envWorkerExe)))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if _, err := d.Start(context.Background(), os.Getenv(envMinion), os.Getenv(envRequest), receipt.ProfileConfigure); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println("launched")
	return 0
}

// `tool start ... 2>&1 | tee log` ends when the tool exits: the detached worker does not inherit the
// launcher's stdout or stderr.
func TestDetachedWorkerDoesNotInheritOutput(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("spawns processes")
	}
	worker := scriptWorker(t, 8)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envChild+"=launcher", envClaimDir+"="+claimDir(t), envMinion+"="+newMinionID(),
		envRequest+"="+uuid.NewString(), envWorkerExe+"="+worker)
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = pw, pw // one pipe, like 2>&1 |
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	_ = pw.Close()
	got := make(chan []byte, 1)
	go func() { b, _ := io.ReadAll(pr); got <- b }()
	select {
	case out := <-got:
		if !bytes.Contains(out, []byte("launched")) || bytes.Contains(out, []byte("worker-")) {
			t.Fatalf("pipe output %q", out)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the pipe stayed open after the launcher exited: the worker inherited it")
	}
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	_ = pr.Close()
}

// A detached Resume returns once its worker process polls; the worker (started with the two identities
// only) decides from the persisted claim to poll, and the minion's receipt replaces unknown.
func TestDetachedResume(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("spawns processes")
	}
	e := startSim(t)
	m := e.addMinion(fakeminion.WithHold())
	tm := testTimers()
	tm.ExecutionWait, tm.PollBudget = 1500*time.Millisecond, 3
	d := e.dispatcher(WithTimers(tm))
	ctx := context.Background()
	req := uuid.NewString()
	mustStart(t, d, receipt.ProfileConfigure, m.ID(), req)
	if got := waitFinal(t, d, receipt.ProfileConfigure, m.ID(), req); got.Status != receipt.StatusUnknown {
		t.Fatalf("%+v", got)
	}
	m.Release()
	waitRuns(t, e, 1)
	cstWaitFor(t, func() bool { _, ok := m.Receipt(req); return ok })
	// The first worker commits unknown and then releases the request lock; a Resume while it still holds
	// it answers "a worker is polling" without resuming (a loaded machine shows that window).
	cstWaitFor(t, func() bool {
		held, err := d.leases.RequestLockHeld(ctx, req)
		return err == nil && !held
	})

	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	env := childEnv(e)[len(os.Environ()):]
	dd := e.dispatcher(WithDetachedWorkers(exe, env...))
	t0 := time.Now()
	r, err := dd.Resume(ctx, m.ID(), req)
	if err != nil || (r.Status != receipt.StatusUnknown && r.Status != receipt.StatusSucceeded) {
		t.Fatalf("resume: %+v %v", r, err) // the worker polls at once: it may have resolved it already
	}
	if time.Since(t0) > 5*time.Second {
		t.Fatalf("detached resume took %s", time.Since(t0))
	}
	if c := mustClaim(t, dd, req); c.ResumedAt == nil {
		t.Fatalf("resume not recorded: %+v", c)
	}
	c := waitClaim(t, dd, req, "resolved", func(c *claims.Claim) bool { return c.Status != receipt.StatusUnknown })
	if c.Status != receipt.StatusSucceeded || c.Evidence != evidenceReceipt || c.Quarantining() {
		t.Fatalf("%+v", c)
	}
	waitLockFree(t, dd, req)
	if active, err := dd.WorkerActive(ctx, req); err != nil || active {
		t.Fatalf("worker active %v %v", active, err)
	}
	if e.runs() != 1 || m.Runs() != 1 {
		t.Fatalf("republished: runs %d minion %d", e.runs(), m.Runs())
	}
	if _, err := dd.Resume(ctx, m.ID(), req); !errors.Is(err, ErrNotUnknown) {
		t.Fatalf("resume resolved: %v", err)
	}
}
