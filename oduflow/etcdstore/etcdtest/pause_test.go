package etcdtest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/oduflow/oduflow-go/internal/testwait"
	"github.com/oduflow/oduflow-go/oduflow"
	"github.com/oduflow/oduflow-go/oduflow/claims"
	"github.com/oduflow/oduflow-go/oduflow/oduflowtest/fakeminion"
	"github.com/oduflow/oduflow-go/receipt"
	"github.com/oduflow/oduflow-go/salt/salttest"
)

// pauseChildEnv turns the re-executed test binary into a dispatcher process that SIGSTOPs itself at one
// worker step (see runPauseChild) and, once continued, finishes its request.
const pauseChildEnv = "ETCDTEST_PAUSE_CHILD"

// runDelay is how long a run of the pause tests' minion lasts.
const runDelay = 1500 * time.Millisecond

// pauseSteps are the worker steps (Hooks.Step) a dispatcher process is stopped at.
var pauseSteps = []string{"claimed", "lease", "dispatch_recorded", "publish_sending", "publish_replied", "returned", "committed"}

// runPauseChild is the child's whole life: start the request with an in-process worker that stops this
// whole process (SIGSTOP, as a GC pause, a frozen VM or a swapped-out container would) at the step named
// by the job; once continued (SIGCONT), wait for the worker and exit 0. It returns only when there is no
// job (exit code -1).
func runPauseChild() int {
	raw := os.Getenv(pauseChildEnv)
	if raw == "" {
		return -1
	}
	var job crashJob
	if err := json.Unmarshal([]byte(raw), &job); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	st, err := openCrashStore(ctx, job.Claims)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	stop := func(_ context.Context, _ oduflow.RequestRef, step string) {
		if step == job.KillAt {
			_ = syscall.Kill(os.Getpid(), syscall.SIGSTOP) // returns once continued
		}
	}
	d, err := newSaltDispatcher(job.Master, job.Events, job.KeyFile, job.PKIDir, st, oduflow.WithHooks(oduflow.Hooks{Step: stop}))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	if _, err := d.Start(ctx, job.Minion, job.Request, receipt.ProfileConfigure); err != nil {
		fmt.Fprintln(os.Stderr, "start:", err)
		return 2
	}
	_ = d.Wait(ctx)
	_ = d.Close(closedContext())
	return 0
}

// pausedChild is a running child dispatcher process of the pause tests.
type pausedChild struct {
	cmd    *exec.Cmd
	done   chan error
	stderr bytes.Buffer
}

// startPausedDispatcher starts a child dispatcher process and returns once it stopped itself at job's step.
func startPausedDispatcher(t *testing.T, job crashJob) *pausedChild {
	t.Helper()
	data, err := json.Marshal(job)
	if err != nil {
		t.Fatal(err)
	}
	c := &pausedChild{cmd: exec.Command(os.Args[0], "-test.run=^$"), done: make(chan error, 1)}
	c.cmd.Env = append(os.Environ(), pauseChildEnv+"="+string(data))
	c.cmd.Stderr = &c.stderr
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { c.done <- c.cmd.Wait() }()
	t.Cleanup(func() {
		_ = c.cmd.Process.Signal(syscall.SIGCONT)
		_ = c.cmd.Process.Kill()
		<-c.done
	})
	// the child stops itself (SIGSTOP): its state in /proc is the only sign
	testwait.Until(t, "child dispatcher never stopped at "+job.KillAt, 30*time.Second, func() bool {
		select {
		case err := <-c.done:
			t.Fatalf("child dispatcher ended before stopping at %s: %v; stderr:\n%s", job.KillAt, err, c.stderr.String())
		default:
		}
		return processStopped(c.cmd.Process.Pid)
	})
	return c
}

// resume continues the stopped child and waits for it to finish its request.
func (c *pausedChild) resume(t *testing.T) {
	t.Helper()
	if err := c.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-c.done:
		c.done <- err // for the cleanup
		if err != nil {
			t.Fatalf("continued dispatcher: %v; stderr:\n%s", err, c.stderr.String())
		}
	case <-time.After(60 * time.Second):
		t.Fatal("continued dispatcher did not finish")
	}
}

// processStopped reports whether pid is in the stopped state (T in /proc/<pid>/stat).
func processStopped(pid int) bool {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	return i > 0 && len(s) > i+2 && s[i+2] == 'T'
}

// TestPausedDispatcherAtEachStep: a dispatcher process (etcd claims, a 2 s lease TTL) is stopped with
// SIGSTOP at each worker step for longer than its leases' TTL and the launch grace, then continued with
// SIGCONT; meanwhile another replica, through another master serving the same minion, (a) reconciles the
// request as an operator would (FromMinion, and Assert failed when that is refused) and/or (b) starts a
// second request for the client. The minion (fakeminion.Model, which enforces fencing tokens as the
// Python module does) never has two runs in flight at once, and a request whose reconciliation lifted
// the quarantine without a run (never ran, or an assertion) never runs afterwards.
func TestPausedDispatcherAtEachStep(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	type variant struct {
		name             string
		reconcile, other bool
	}
	variants := []variant{{"alone", false, false}, {"reconcile", true, false}, {"second", false, true},
		{"reconcile+second", true, true}}
	for _, step := range pauseSteps {
		for _, v := range variants {
			t.Run(step+"/"+v.name, func(t *testing.T) {
				t.Parallel()
				pausedDispatcherScenario(t, step, v.reconcile, v.other)
			})
		}
	}
}

func pausedDispatcherScenario(t *testing.T, step string, reconcile, other bool) {
	ctx := context.Background()
	storeURL := claimsURL(t, newStore(t).Prefix())
	// Runs last a moment, so that a late run and a second request's run would overlap.
	m := fakeminion.NewModel(newMinion(), fakeminion.WithDelay(runDelay))
	simA, simB := startModelMaster(t, m), startModelMaster(t, m)
	r1 := receipt.NewRequestID()
	child := startPausedDispatcher(t, crashJob{Claims: storeURL, Master: simA.Addr(), Events: simA.EventsAddr(),
		KeyFile: simA.KeyFile(), PKIDir: simA.PKIDir(), Minion: m.ID(), Request: r1, KillAt: step})

	st, err := openCrashStore(ctx, storeURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	b, err := newSaltDispatcher(simB.Addr(), simB.EventsAddr(), simB.KeyFile(), simB.PKIDir(), st)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close(closedContext()) })

	// Past the TTL and the launch grace: the stopped process holds nothing any more.
	testwait.Until(t, "still running long after the TTL and the launch grace",
		crashTTL+crashTimers().LaunchGrace+20*time.Second, func() bool {
			r, err := b.Status(ctx, m.ID(), r1, receipt.ProfileConfigure)
			if err != nil {
				t.Fatal(err)
			}
			return r.Status != receipt.StatusRunning
		})
	liftedWithoutRun := false // a reconciliation lifted the quarantine without a run of r1
	if reconcile {
		liftedWithoutRun = reconcileAsOperator(t, b, m, r1)
	}
	var r2 string
	if other {
		r2 = receipt.NewRequestID()
		if _, err := b.Start(ctx, m.ID(), r2, receipt.ProfileProduction); err != nil {
			t.Fatal(err)
		}
		// The second request is dispatched (its run in flight) or refused before the paused one goes on.
		waitFor(t, "second request dispatched or final", func() bool {
			c, err := b.Lookup(ctx, m.ID(), r2)
			return err == nil && (c.Phase == claims.PhaseDispatched || c.Phase.Final())
		})
	}
	child.resume(t)
	if other {
		waitFinalClaim(t, b, m.ID(), r2)
	}
	time.Sleep(runDelay + 500*time.Millisecond) // a late publication's run would have ended by now
	checkPauseInvariants(t, b, m, r1, liftedWithoutRun)
}

// reconcileAsOperator reconciles r1 as an operator would: FromMinion, and when the minion's evidence
// does not resolve it, an assertion of failure. It reports whether the recorded outcome says r1 did
// not run (never ran, or asserted), so that it must never run afterwards.
func reconcileAsOperator(t *testing.T, d *oduflow.Dispatcher, m *fakeminion.Model, r1 string) bool {
	t.Helper()
	ctx := context.Background()
	_, err := d.Reconcile(ctx, m.ID(), r1, oduflow.FromMinion{})
	if errors.Is(err, oduflow.ErrUnresolved) {
		_, err = d.Reconcile(ctx, m.ID(), r1, oduflow.Assert{Outcome: receipt.StatusFailed, Total: 1, Who: "ops",
			Why: "the minion never started it"})
	}
	switch {
	case errors.Is(err, oduflow.ErrNotUnknown):
		return false // final already: nothing to reconcile
	case err != nil && !errors.Is(err, oduflow.ErrUnresolved):
		t.Fatalf("reconcile: %v", err)
	}
	c, lerr := d.Lookup(ctx, m.ID(), r1)
	if lerr != nil {
		t.Fatal(lerr)
	}
	if c.Phase == claims.PhaseClaimed || !c.Phase.Final() {
		return false
	}
	_, ran := minionRan(m, r1)
	return !ran && (c.ErrorCode == claims.CodeNeverRan || c.Phase == claims.PhaseAsserted)
}

// minionRan reports the minion's receipt of request and whether it says the run started (anything but
// a fenced refusal).
func minionRan(m *fakeminion.Model, request string) (receipt.Receipt, bool) {
	r, ok := m.Receipt(request)
	return r, ok && !r.Fenced()
}

func checkPauseInvariants(t *testing.T, d *oduflow.Dispatcher, m *fakeminion.Model, r1 string, liftedWithoutRun bool) {
	t.Helper()
	if n := m.MaxConcurrentRuns(); n > 1 {
		t.Errorf("%d runs overlapped on one client", n)
	}
	rc, ran := minionRan(m, r1)
	if liftedWithoutRun && ran {
		t.Errorf("the paused request ran after its reconciliation said it did not: minion receipt %+v", rc)
	}
	c, err := d.Lookup(context.Background(), m.ID(), r1)
	if err != nil {
		t.Fatal(err)
	}
	if c.ErrorCode == claims.CodeNeverRan && ran {
		t.Errorf("claim says never ran, the minion ran it: %+v", rc)
	}
	if c.Phase.Final() && c.Status == receipt.StatusSucceeded && !ran {
		t.Errorf("claim says succeeded, the minion never ran it: %+v", c)
	}
}

// startModelMaster starts a salttest master serving the model minion m (its key accepted).
func startModelMaster(t *testing.T, m *fakeminion.Model) *salttest.Master {
	t.Helper()
	sim, err := salttest.Start(context.Background(), salttest.WithDir(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sim.Close() })
	if err := fakeminion.Add(sim, m); err != nil {
		t.Fatal(err)
	}
	return sim
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testwait.Until(t, what, 30*time.Second, cond)
}
