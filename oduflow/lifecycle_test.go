package oduflow

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/oduflow/oduflow-go/oduflow/claims"
	"github.com/oduflow/oduflow-go/oduflow/oduflowtest/fakeminion"
	"github.com/oduflow/oduflow-go/receipt"
)

// Close with time to spare lets every in-flight worker finish; afterwards new requests are refused
// with ErrClosed and nothing is written.
func TestCloseDrainsInFlightWorkers(t *testing.T) {
	t.Parallel()
	e := startSim(t)
	d := e.dispatcher()
	ctx := context.Background()
	type job struct{ minion, req string }
	var jobs []job
	for range 4 {
		m := e.addMinion(fakeminion.WithDelay(300 * time.Millisecond))
		j := job{m.ID(), uuid.NewString()}
		mustStart(t, d, receipt.ProfileConfigure, j.minion, j.req)
		jobs = append(jobs, j)
	}
	cctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if err := d.Close(cctx); err != nil {
		t.Fatalf("drain with time to spare: %v", err)
	}
	for _, j := range jobs {
		if c := mustClaim(t, d, j.req); c.Phase != claims.PhaseTerminal || c.Status != receipt.StatusSucceeded {
			t.Fatalf("after the drain: %+v", c)
		}
	}
	m := e.addMinion()
	req := uuid.NewString()
	if _, err := d.Start(ctx, m.ID(), req, receipt.ProfileConfigure); !errors.Is(err, ErrClosed) {
		t.Fatalf("Start after Close: %v, want ErrClosed", err)
	}
	if _, err := d.store.Get(ctx, req); !errors.Is(err, claims.ErrNoClaim) {
		t.Fatalf("a refused Start wrote a claim: %v", err)
	}
	if e.runs() != len(jobs) {
		t.Fatalf("publications %d, want %d", e.runs(), len(jobs))
	}
}

// A drain cut short: a worker that has not recorded its intent commits dispatcher_closed (nothing
// published); one past its intent releases its locks and reads unknown at once; another dispatcher with
// adoption takes both kinds over: the published one is polled to its minion's result (one publication),
// the one never sent is fenced and recorded never ran; no quarantine is left.
func TestCloseMidRunThenAdoption(t *testing.T) {
	t.Parallel()
	e := startSim(t)
	ctx := context.Background()
	held := e.addMinion(fakeminion.WithHold()) // published; its run waits for Release
	parked := e.addMinion()                    // its worker waits at the lease step until Close
	fenced := e.addMinion()                    // its worker waits after its intent until Close
	var d1 *Dispatcher
	var leases, intents atomic.Int32
	reached := make(chan string, 4)
	d1 = e.dispatcher(withStepHook(func(step string) {
		switch {
		case step == stepLease && leases.Add(1) == 2, step == stepDispatchRecorded && intents.Add(1) == 2:
			reached <- step
			<-d1.ctx.Done() // until Close gives up its drain
		}
	}))
	heldReq, parkedReq, fencedReq := uuid.NewString(), uuid.NewString(), uuid.NewString()
	mustStart(t, d1, receipt.ProfileConfigure, held.ID(), heldReq)
	waitClaim(t, d1, heldReq, "dispatched", func(c *claims.Claim) bool { return c.Phase == claims.PhaseDispatched })
	mustStart(t, d1, receipt.ProfileConfigure, parked.ID(), parkedReq)
	<-reached
	mustStart(t, d1, receipt.ProfileConfigure, fenced.ID(), fencedReq)
	<-reached

	cctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if err := d1.Close(cctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("drain cut short: %v", err)
	}
	// Never dispatched: failed, nothing published, no quarantine.
	if c := mustClaim(t, d1, parkedReq); c.Phase != claims.PhaseTerminal || c.ErrorCode != claims.CodeDispatcherClosed ||
		c.Status != receipt.StatusFailed || c.Quarantining() {
		t.Fatalf("claim never dispatched after Close: %+v", c)
	}
	// Past the intent: the lock is free, so it reads unknown now (not running until a launch grace ends).
	for _, req := range []string{heldReq, fencedReq} {
		c := mustClaim(t, d1, req)
		if !c.WasDispatched() || c.Phase.Final() {
			t.Fatalf("claim past its intent after Close: %+v", c)
		}
		if st := status(t, d1, c); st != receipt.StatusUnknown {
			t.Fatalf("a dispatched request without its worker reads %s, want unknown", st)
		}
	}
	d2 := e.dispatcher(WithAdoption(20 * time.Millisecond))
	held.Release()
	got := waitFinal(t, d2, receipt.ProfileConfigure, held.ID(), heldReq)
	if got.Status != receipt.StatusSucceeded {
		t.Fatalf("adopted request: %+v", got)
	}
	if n := e.sim.PublicationCount(funRun, *got.JID); n != 1 {
		t.Fatalf("publications of the adopted request: %d", n)
	}
	never := waitFinal(t, d2, receipt.ProfileConfigure, fenced.ID(), fencedReq)
	if c := mustClaim(t, d2, fencedReq); never.Status != receipt.StatusFailed || c.ErrorCode != claims.CodeNeverRan ||
		c.Evidence != evidenceFenced {
		t.Fatalf("adopted request never sent: %+v %+v", never, c)
	}
	for _, m := range []string{held.ID(), parked.ID(), fenced.ID()} {
		if q, err := d2.Quarantine(ctx, m); err != nil || len(q) != 0 {
			t.Fatalf("quarantine of %s: %+v %v", m, q, err)
		}
	}
	e.quiesce()
	if held.Runs() != 1 || parked.Runs() != 0 || fenced.Runs() != 0 || e.runs() != 1 {
		t.Fatalf("runs: held %d parked %d fenced %d, publications %d", held.Runs(), parked.Runs(), fenced.Runs(), e.runs())
	}
	for u, err := range d2.Unresolved(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		t.Errorf("left unresolved: %+v", u.Claim)
	}
}

// Quarantine, a new request's preflight and Resume give one answer for a client at every point of a
// request's life (blocksClient): before its claim, dispatched with its worker, dispatched after its
// worker closed (within what used to be the launch grace: Quarantine said clear while the preflight
// failed quarantined and Resume refused ErrNotUnknown), adopted, and final.
func TestOneAnswerForAClient(t *testing.T) {
	e := startSim(t)
	ctx := context.Background()
	m := e.addMinion(fakeminion.WithHold())
	req := uuid.NewString()
	agree := func(point string, d *Dispatcher, blocked bool, wantCode claims.ErrorCode) {
		t.Helper()
		q, err := d.Quarantine(ctx, m.ID())
		if err != nil {
			t.Fatalf("%s: Quarantine: %v", point, err)
		}
		listed := len(q) == 1 && q[0].RequestID == req
		other := &claims.Claim{MinionID: m.ID(), RequestID: uuid.NewString(), JID: string(d.jids.Next())}
		code, _ := d.clientCheck(ctx, other)
		_, rerr := d.resumable(ctx, target{minion: m.ID(), request: req})
		resumable := rerr == nil
		if listed != blocked || (code == claims.CodeQuarantined) != blocked || resumable != blocked || code != wantCode {
			t.Fatalf("%s: Quarantine lists it %v, preflight %q (want %q), Resume accepts it %v (%v); want blocked %v",
				point, listed, code, wantCode, resumable, rerr, blocked)
		}
	}
	d1 := e.dispatcher()
	agree("no claim", d1, false, "")
	mustStart(t, d1, receipt.ProfileConfigure, m.ID(), req)
	waitClaim(t, d1, req, "dispatched", func(c *claims.Claim) bool { return c.Phase == claims.PhaseDispatched })
	agree("dispatched, worker alive", d1, false, claims.CodeLeaseBusy)
	if err := d1.Close(closedContext()); !errors.Is(err, context.Canceled) {
		t.Fatalf("close cut short: %v", err)
	}
	waitLockFree(t, d1, req)
	d2 := e.dispatcher()
	agree("dispatched, worker gone", d2, true, claims.CodeQuarantined)
	d3 := e.dispatcher(WithAdoption(time.Hour))
	if !waitUntil(10*time.Second, func() bool { held, _ := d3.leases.RequestLockHeld(ctx, req); return held }) {
		t.Fatal("never adopted")
	}
	agree("adopted", d2, false, claims.CodeLeaseBusy)
	m.Release()
	if r := waitFinal(t, d2, receipt.ProfileConfigure, m.ID(), req); r.Status != receipt.StatusSucceeded {
		t.Fatalf("final: %+v", r)
	}
	agree("final", d2, false, "")
}

// A detached worker SIGKILLed after its publication, and one killed after its intent but before
// sending: a dispatcher with adoption takes both over, at once (no launch grace to wait for): the
// first ends with its minion's result, the second is fenced and never runs; one publication in all.
func TestAdoptionAfterKilledDetachedWorker(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("spawns processes")
	}
	for _, tc := range []struct {
		name    string
		pauseAt string
		runs    int
		want    receipt.Status
		code    claims.ErrorCode
	}{
		{"killed after the publish reply", stepPublishReplied, 1, receipt.StatusSucceeded, ""},
		{"killed after the intent, before sending", stepDispatchRecorded, 0, receipt.StatusFailed, claims.CodeNeverRan},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := startSim(t)
			m := e.addMinion()
			stepFile := filepath.Join(t.TempDir(), "steps")
			exe, err := os.Executable()
			if err != nil {
				t.Fatal(err)
			}
			env := childEnv(e, envStepFile+"="+stepFile, envPauseAt+"="+tc.pauseAt)[len(os.Environ()):]
			d := e.dispatcher(WithDetachedWorkers(exe, env...))
			req := uuid.NewString()
			mustStart(t, d, receipt.ProfileConfigure, m.ID(), req)
			pid := waitStep(t, stepFile, tc.pauseAt)
			if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			waitLockFree(t, d, req)
			adopter := e.dispatcher(WithAdoption(20 * time.Millisecond))
			got := waitFinal(t, adopter, receipt.ProfileConfigure, m.ID(), req)
			c := mustClaim(t, adopter, req)
			if got.Status != tc.want || c.ErrorCode != tc.code {
				t.Fatalf("adopted: %+v %+v", got, c)
			}
			if q, err := adopter.Quarantine(context.Background(), m.ID()); err != nil || len(q) != 0 {
				t.Fatalf("quarantine: %+v %v", q, err)
			}
			e.quiesce()
			if e.runs() != tc.runs || m.Runs() != tc.runs {
				t.Fatalf("publications %d, runs %d, want %d", e.runs(), m.Runs(), tc.runs)
			}
		})
	}
}

// A claim whose worker vanished before its intent (phase claimed) is never published by an adopter:
// within its launch grace it is left alone (its worker may not hold the lock yet); past it, it is
// committed unknown (worker_lost), which never quarantines its client.
func TestAdoptionNeverPublishesAClaimedRequest(t *testing.T) {
	e := startSim(t)
	ctx := context.Background()
	m := e.addMinion()
	tm := testTimers()
	tm.LaunchGrace = 700 * time.Millisecond
	clk := newFakeClock() // the launch grace passes on it, not on the wall clock
	d := e.dispatcher(WithTimers(tm), withClock(clk))
	claimed := func() *claims.Claim {
		c := &claims.Claim{Protocol: claimProtocol, MinionID: m.ID(), RequestID: uuid.NewString(), Profile: receipt.ProfileConfigure,
			Role: "configure", JID: string(d.jids.Next()), Phase: claims.PhaseClaimed, CreatedAt: clk.Now().UTC()}
		if err := d.store.Create(ctx, c); err != nil {
			t.Fatal(err)
		}
		return c
	}
	old := claimed()
	advanceWindows(d, clk, tm.LaunchGrace+100*time.Millisecond)
	young := claimed()
	adopter := e.dispatcher(WithTimers(tm), WithAdoption(20*time.Millisecond), withClock(clk))
	got := waitFinal(t, adopter, receipt.ProfileConfigure, m.ID(), old.RequestID)
	if c := mustClaim(t, adopter, old.RequestID); got.Status != receipt.StatusUnknown || c.ErrorCode != claims.CodeWorkerLost || c.Quarantining() {
		t.Fatalf("claimed past its grace: %+v %+v", got, c)
	}
	// one more whole round, run here, has looked at young; Close waits for what it started
	adopter.adoptRound(ctx)
	e.quiesce()
	if c := mustClaim(t, adopter, young.RequestID); c.Phase != claims.PhaseClaimed {
		t.Fatalf("claimed within its grace was touched: %+v", c)
	}
	if q, err := adopter.Quarantine(ctx, m.ID()); err != nil || len(q) != 0 || e.runs() != 0 {
		t.Fatalf("quarantine %+v %v, publications %d", q, err, e.runs())
	}
}
