package oduflow

import (
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/oduflow/oduflow-go/oduflow/claims"
	"github.com/oduflow/oduflow-go/oduflow/oduflowtest/fakeminion"
	"github.com/oduflow/oduflow-go/receipt"
)

func reuseTimers(w time.Duration) Timers {
	t := testTimers()
	t.CapabilityReuse = w
	return t
}

// runOne starts one configure request on minion and waits for its final status.
func runOne(t *testing.T, d *Dispatcher, minion string) Response {
	t.Helper()
	req := uuid.NewString()
	mustStart(t, d, receipt.ProfileConfigure, minion, req)
	return waitFinal(t, d, receipt.ProfileConfigure, minion, req)
}

// TestCapabilityReuseWithinWindow: with Timers.CapabilityReuse, a second request of the same minion within
// the window publishes no oduflow_job.capabilities (the minion runs one Salt job less), and one after the
// window asks again; every request still runs once, proven by its signed return.
func TestCapabilityReuseWithinWindow(t *testing.T) {
	e := startSim(t)
	m := e.addMinion()
	clk := newFakeClock()
	d := e.dispatcher(WithTimers(reuseTimers(time.Minute)), withClock(clk))
	for i := 0; i < 2; i++ {
		if r := runOne(t, d, m.ID()); r.Status != receipt.StatusSucceeded {
			t.Fatalf("request %d: %+v", i, r)
		}
	}
	if got := m.Calls(funCapabilities); got != 1 {
		t.Fatalf("two requests within the window: %d capability calls on the minion, want 1", got)
	}
	clk.Advance(time.Minute) // the kept answer is exactly as old as the window: asked again
	if r := runOne(t, d, m.ID()); r.Status != receipt.StatusSucceeded {
		t.Fatalf("request after the window: %+v", r)
	}
	if got := m.Calls(funCapabilities); got != 2 {
		t.Fatalf("after the window: %d capability calls, want 2", got)
	}
	if m.Runs() != 3 || m.Calls(funAttest) != 0 {
		// each receipt is proven by the run's own signed return (TestRunReturnProof)
		t.Fatalf("runs %d, attests %d: want one run per request, each proven by its own return", m.Runs(), m.Calls(funAttest))
	}
	clk.Advance(-2 * time.Minute) // a clock set back never extends a kept answer
	if r := runOne(t, d, m.ID()); r.Status != receipt.StatusSucceeded {
		t.Fatalf("request after the clock was set back: %+v", r)
	}
	if got := m.Calls(funCapabilities); got != 3 {
		t.Fatalf("after the clock was set back: %d capability calls, want 3", got)
	}
}

// TestCapabilityReuseOffByDefault: without the window every preflight asks the minion.
func TestCapabilityReuseOffByDefault(t *testing.T) {
	e := startSim(t)
	m := e.addMinion()
	d := e.dispatcher()
	for i := 0; i < 2; i++ {
		if r := runOne(t, d, m.ID()); r.Status != receipt.StatusSucceeded {
			t.Fatalf("request %d: %+v", i, r)
		}
	}
	if got := m.Calls(funCapabilities); got != 2 {
		t.Fatalf("%d capability calls for two requests without a window, want 2", got)
	}
}

// TestCapabilityReuseMinionChangedInWindow: what a window trades, and what it keeps. The minion's module
// starts failing its runtime guard inside the window: the next request's preflight reuses the clear
// answer, so its run is published, and the module refuses it with nothing run (a typed failure, never a
// success, never a second run). That failure drops the kept answer: the request after it asks the minion
// and fails its preflight with nothing published. A clear answer is never kept from an unclear one.
func TestCapabilityReuseMinionChangedInWindow(t *testing.T) {
	e := startSim(t)
	m := e.addMinion()
	d := e.dispatcher(WithTimers(reuseTimers(time.Hour)))
	if r := runOne(t, d, m.ID()); r.Status != receipt.StatusSucceeded {
		t.Fatalf("first request: %+v", r)
	}
	// The same minion (same key), its module now refusing to run unprotected.
	bad := fakeminion.NewModel(m.ID(), fakeminion.WithRuntimeGuardFailure("salt.state.State.call changed"))
	e.accept(bad)
	e.sim.AddMinion(m.ID(), bad.Handle)

	runsBefore := e.runs()
	r := runOne(t, d, m.ID())
	if r.Status == receipt.StatusSucceeded || bad.Runs() != 0 {
		t.Fatalf("a run the module refuses: %+v, %d runs", r, bad.Runs())
	}
	if bad.Calls(funCapabilities) != 0 || e.runs() != runsBefore+1 {
		t.Fatalf("inside the window: %d capability calls (want 0), %d run publications (want 1)",
			bad.Calls(funCapabilities), e.runs()-runsBefore)
	}
	r = runOne(t, d, m.ID())
	if r.Status != receipt.StatusFailed || r.ErrorCode != claims.CodeRuntimeGuard {
		t.Fatalf("after the refusal the preflight asks again and refuses: %+v", r)
	}
	if bad.Calls(funCapabilities) != 1 || e.runs() != runsBefore+1 {
		t.Fatalf("after the refusal: %d capability calls (want 1), %d run publications (want 1)",
			bad.Calls(funCapabilities), e.runs()-runsBefore)
	}
	// The unclear answer was not kept: the next request asks again.
	runOne(t, d, m.ID())
	if bad.Calls(funCapabilities) != 2 {
		t.Fatalf("an unclear answer was reused: %d capability calls, want 2", bad.Calls(funCapabilities))
	}
}

// TestCapabilityReuseStaleFenceMark: the other trade, with two claim stores on one minion. Dispatcher A keeps
// the minion's answer (fence mark 0); dispatcher B, on a store of its own, then raises the minion's mark with
// runs of its own. A's next request inside the window asks its store for a token above the stale mark, and
// the minion refuses it as fenced: failed with code fenced, nothing run, never a second run. The refusal drops
// A's kept answer, so A's next request reads the mark again and runs.
func TestCapabilityReuseStaleFenceMark(t *testing.T) {
	e := startSim(t)
	m := e.addMinion()
	a := e.dispatcher(WithTimers(reuseTimers(time.Hour)))
	b := e.dispatcher(WithClaimDir(claimDir(t)))
	if r := runOne(t, a, m.ID()); r.Status != receipt.StatusSucceeded {
		t.Fatalf("A's first request: %+v", r)
	}
	for i := 0; i < 3; i++ {
		if r := runOne(t, b, m.ID()); r.Status != receipt.StatusSucceeded {
			t.Fatalf("B's request %d: %+v", i, r)
		}
	}
	runs, fenced := m.Runs(), m.FencedRuns()
	r := runOne(t, a, m.ID())
	if r.Status != receipt.StatusFailed || r.ErrorCode != claims.CodeFenced {
		t.Fatalf("A's request on the stale mark: %+v, want failed fenced", r)
	}
	if m.Runs() != runs || m.FencedRuns() != fenced+1 {
		t.Fatalf("on the stale mark: %d runs (want %d), %d fenced (want %d)", m.Runs(), runs, m.FencedRuns(), fenced+1)
	}
	if r := runOne(t, a, m.ID()); r.Status != receipt.StatusSucceeded {
		t.Fatalf("A's request after the refusal: %+v", r)
	}
	if m.Runs() != runs+1 {
		t.Fatalf("after the refusal: %d runs, want %d", m.Runs(), runs+1)
	}
}
