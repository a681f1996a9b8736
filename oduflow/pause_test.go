package oduflow

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/google/uuid"

	"github.com/oduflow/oduflow-go/oduflow/claims"
	"github.com/oduflow/oduflow-go/oduflow/oduflowtest/fakeminion"
	"github.com/oduflow/oduflow-go/receipt"
)

// pauseRunDelay is how long a run of the pause tests' minion lasts (so that a late run and a second
// request's run would overlap).
const pauseRunDelay = 1500 * time.Millisecond

// TestPausedWorkerAtEachStepFileStore: a detached worker process (file claims) is stopped with SIGSTOP at
// each worker step and, while it is stopped, the other dispatcher's clock moves on by three hours (a
// pause of any length: past the launch grace, the status expiry and the hard deadline), with and without
// (a) a reconciliation as an operator would make it (FromMinion; Assert failed when that is refused)
// and (b) a second request for the client; then it is continued with SIGCONT. A stopped process keeps
// its kernel locks, so the client stays leased to it; the minion (which enforces fencing tokens like the
// Python module) never has two runs in flight, and a request whose reconciliation lifted the quarantine
// without a run (never ran, or an assertion) never runs afterwards.
func TestPausedWorkerAtEachStepFileStore(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	steps := []string{stepClaimed, stepLease, stepDispatchRecorded, stepPublishSending, stepPublishReplied,
		stepReturned, stepCommitted}
	type variant struct {
		name             string
		reconcile, other bool
	}
	variants := []variant{{"alone", false, false}, {"reconcile", true, false}, {"second", false, true},
		{"reconcile+second", true, true}}
	// A scenario mostly waits (for its worker process, its minion's runs): the four variants of a step
	// run at once, beside other steps (parallel subtests), so that the 28 scenarios do not queue for
	// the -parallel slots (GOMAXPROCS: 2 on a small CI machine).
	for _, step := range steps {
		t.Run(step, func(t *testing.T) {
			t.Parallel()
			var wg sync.WaitGroup
			for _, v := range variants {
				wg.Go(func() {
					t.Run(v.name, func(t *testing.T) { pausedWorkerScenario(t, step, v.reconcile, v.other) })
				})
			}
			wg.Wait()
		})
	}
}

func pausedWorkerScenario(t *testing.T, step string, reconcile, other bool) {
	ctx := context.Background()
	e := startSim(t)
	m := e.addMinion(fakeminion.WithDelay(pauseRunDelay))
	stepFile := filepath.Join(t.TempDir(), "steps")
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	clk := newFakeClock()
	env := childEnv(e, envStepFile+"="+stepFile, envPauseAt+"="+step)[len(os.Environ()):]
	d := e.dispatcher(WithDetachedWorkers(exe, env...), withClock(clk))
	r1 := uuid.NewString()
	mustStart(t, d, receipt.ProfileConfigure, m.ID(), r1)
	pid := waitStep(t, stepFile, step)
	// The worker waits in its step hook for "<steps>.go": stop it there, then let the hook return, so
	// that it goes on only once continued.
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	stopped := true
	defer func() {
		if stopped {
			_ = syscall.Kill(pid, syscall.SIGCONT)
		}
	}()
	if err := os.WriteFile(stepFile+".go", nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if step == stepPublishReplied || step == stepReturned || step == stepCommitted {
		// The run published before the pause ends meanwhile: wait for its receipt (at once when it had
		// returned already), for at most as long as the run lasts and a margin.
		waitUntil(pauseRunDelay+300*time.Millisecond, func() bool { _, ok := m.Receipt(r1); return ok })
	}
	clk.Advance(3 * time.Hour)
	r, err := d.Status(ctx, m.ID(), r1, receipt.ProfileConfigure)
	if err != nil {
		t.Fatal(err)
	}
	if c := mustClaim(t, d, r1); !c.Phase.Final() && !c.WasDispatched() && r.Status != receipt.StatusRunning {
		t.Fatalf("a stopped worker still holds its lock: %s", r.Status)
	}
	liftedWithoutRun := false
	if reconcile {
		liftedWithoutRun = reconcileLikeOperator(t, d, m, r1)
	}
	r2 := ""
	if other {
		r2 = uuid.NewString()
		mustStart(t, d, receipt.ProfileProduction, m.ID(), r2)
		waitClaim(t, d, r2, "second request dispatched or final", func(c *claims.Claim) bool {
			return c.Phase == claims.PhaseDispatched || c.Phase.Final()
		})
	}
	if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	stopped = false
	waitProcessGone(t, pid)
	if other {
		waitClaim(t, d, r2, "second request final", func(c *claims.Claim) bool { return c.Phase.Final() })
	}
	waitLateRunsEnded(t, m, r1, r2)
	if n := m.MaxConcurrentRuns(); n > 1 {
		t.Errorf("%d runs overlapped on one client", n)
	}
	rc, ok := m.Receipt(r1)
	ran := ok && !rc.Fenced()
	if liftedWithoutRun && ran {
		t.Errorf("the paused request ran after its reconciliation said it did not: %+v", rc)
	}
	if c := mustClaim(t, d, r1); c.ErrorCode == claims.CodeNeverRan && ran {
		t.Errorf("claim says never ran, the minion ran it: %+v", rc)
	}
}

// reconcileLikeOperator reconciles request as an operator would: FromMinion, and when the minion's
// evidence does not resolve it, an assertion of failure. It reports whether the recorded outcome says
// the request did not run (never ran, or asserted) while the minion has no run of it.
func reconcileLikeOperator(t *testing.T, d *Dispatcher, m *fakeminion.Model, request string) bool {
	t.Helper()
	ctx := context.Background()
	_, err := d.Reconcile(ctx, m.ID(), request, FromMinion{})
	if errors.Is(err, ErrUnresolved) {
		_, err = d.Reconcile(ctx, m.ID(), request, Assert{Outcome: receipt.StatusFailed, Total: 1, Who: "ops",
			Why: "the minion never started it"})
	}
	if err != nil && !errors.Is(err, ErrNotUnknown) && !errors.Is(err, ErrUnresolved) {
		t.Fatalf("reconcile: %v", err)
	}
	c := mustClaim(t, d, request)
	rc, ok := m.Receipt(request)
	return c.Phase.Final() && !(ok && !rc.Fenced()) && (c.ErrorCode == claims.CodeNeverRan || c.Phase == claims.PhaseAsserted)
}

// waitProcessGone waits until the detached worker process pid has exited (its parent reaps it).
func waitProcessGone(t *testing.T, pid int) {
	t.Helper()
	if !waitUntil(60*time.Second, func() bool { return syscall.Kill(pid, 0) != nil }) {
		t.Fatal("continued worker did not finish")
	}
}

// lateRunGrace is how long after the continued worker is gone a late publication of its request is given
// to reach the minion and start there.
const lateRunGrace = 500 * time.Millisecond

// waitLateRunsEnded waits until a late publication's run (one started up to lateRunGrace after the
// worker was gone) would have ended: the grace, then until every run the minion started has its terminal
// receipt. The requests are the only ones of the minion; a run it refused as busy (terminal, never
// started) means two runs overlapped, which the caller reports, so it ends the wait too.
func waitLateRunsEnded(t *testing.T, m *fakeminion.Model, requests ...string) {
	t.Helper()
	// a window in which a late publication must not come while the minion stays live
	time.Sleep(lateRunGrace)
	ended := func() bool {
		done := 0
		for _, r := range requests {
			if rc, ok := m.Receipt(r); r != "" && ok && !rc.Fenced() {
				done++
			}
		}
		return m.MaxConcurrentRuns() > 1 || m.Runs() <= done
	}
	if !waitUntil(pauseRunDelay+10*time.Second, ended) {
		t.Fatalf("runs still in flight: %d started", m.Runs())
	}
}
