package oduflow

// Parked waits (awaitLoop, awaitParked), not a goroutine per wait: decided on the 10k-in-flight row
// (bench/cmd/benchrun inflight -n 10000 -status 20000, the row of scripts/bench.sh; bar: peak RSS <=
// 128 MiB, Status p99 <= 2 ms), 3 rounds of each variant, alternated, under nice on a shared 2-core host
// (load average 12 to 38), 2026-12-04. Medians, with the range:
//
//	                     parked (this file)        a goroutine per wait (*)
//	peak RSS             100.6 MiB (99.9-101.9)    237.2 MiB (234.9-250.9)
//	goroutines           8                         10,008
//	stacks in use        5.9 MiB (5.6-6.6)         83.3 MiB (81.8-85.9): 8.6-9.0 KiB per request
//	heap in use          55.8 MiB (55.7-57.6)      80.8 MiB (77.9-81.1)
//	Status median / p99  0.083 / 24.7 ms           0.092 / 34.2 ms
//
// (*) The in-process worker kept waiting on its own goroutine, with its context, as a detached worker
// does (awaitDispatched): a one-line change of handOffPhase, measured, not kept.
//
// A goroutine per wait is more than 1.8 times the RSS bar (the publish path has grown each worker's
// stack before it waits), so parking stays. Neither Status p99 says anything about the 2 ms bar on a host
// that loaded (the medians are 0.07-0.10 ms for both); it needs a quiet host.

import (
	"context"
	"log/slog"
	"strings"
	"sync/atomic"
	"time"

	"github.com/oduflow/oduflow-go/oduflow/claims"
	"github.com/oduflow/oduflow-go/receipt"
	receiptproof "github.com/oduflow/oduflow-go/receipt/proof"
	"github.com/oduflow/oduflow-go/salt"
)

// await waits until deadline for a verified final receipt of c, whose run publication carried the proof
// nonce nonce ("" when it carried none). The run's own return signed over nonce that verifies against the
// pinned key and binds to c ends the wait with no further call (awaitLoop.readReturn). Anything else on
// the event bus, and oduflow_job.status polls on the expected minion (on a schedule spreading the poll
// budget over the window, and at once after every event-bus gap), are hints only: a final-looking one
// makes the worker ask the minion for its signed answer (oduflow_job.attest, a fresh nonce), and only a
// verified proof bound to the claim ends the wait. It returns nil when the window or the budget is spent,
// or ctx ends.
func (d *Dispatcher) await(ctx context.Context, c *claims.Claim, w *waiter, deadline time.Time, nonce string) *receipt.Receipt {
	l := d.newAwaitLoop(ctx, c, w, deadline, false)
	l.runNonce = nonce
	return l.wait()
}

// awaitFrom is await for a wait that did not publish the run (an adopter, a Resume, a reconcile: no
// nonce); with pollFirst the first status poll is made at once (a Resume asks now).
//
// The poll budget is spent only by scheduled polls (and the repeat of an unknown answer); a gap poll is
// limited to one per interval instead, so that nothing a forger can trigger spends the budget.
//
// Events that are never evidence (see eventReason, and receipts that do not bind to c) are counted and
// logged once; they, and final-looking returns, trigger at most one early proof request per poll
// interval (proofLimiter), outside the poll budget: a forger flooding the bus can neither spend the
// budget (and force unknown) nor make the worker flood the minion.
func (d *Dispatcher) awaitFrom(ctx context.Context, c *claims.Claim, w *waiter, deadline time.Time, pollFirst bool) *receipt.Receipt {
	return d.newAwaitLoop(ctx, c, w, deadline, pollFirst).wait()
}

// wait runs the loop's steps on the calling goroutine until the wait ends.
func (l *awaitLoop) wait() *receipt.Receipt {
	wake := make(chan struct{}, 1)
	l.start(func() { signal(wake) })
	for {
		if r, done := l.step(); done {
			l.stop()
			return r
		}
		<-wake // something arrived, the timer fired, or ctx ended; step looks at all of it
	}
}

func earlier(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// final: an answer that ends the wait (a terminal status, or the minion's own definitive unknown).
func final(r *receipt.Receipt) bool {
	return r.Status.Terminal() || r.Status == receipt.StatusUnknown
}

// pollOnce asks the expected minion for its receipt of c (oduflow_job.status). A final-looking answer is
// only a hint: it is replaced by the minion's verified signed answer (prove), or nil. A running or
// not_started answer is returned as is (it never ends a wait nor commits anything). nil means no
// answer that counts.
func (d *Dispatcher) pollOnce(ctx context.Context, c *claims.Claim, deadline time.Time) *receipt.Receipt {
	t0 := time.Now()
	defer func() { d.hooks.observe(ctx, "poll", time.Since(t0)) }()
	timeout := d.timers.CallTimeout
	if rem := time.Until(deadline); rem < timeout {
		timeout = rem
	}
	if timeout <= 0 {
		return nil
	}
	jr, err := d.call(ctx, c.MinionID, funStatus, statusArgs(c), timeout)
	if err != nil {
		d.claimLog(c).Info("status poll without answer", slog.String("error", err.Error()))
		return nil
	}
	r, reason := d.hint(c, jr)
	if reason != "" {
		d.noteUnverified(ctx, c, reason)
		return nil
	}
	if !final(r) {
		return r
	}
	return d.prove(ctx, c, deadline)
}

func statusArgs(c *claims.Claim) []any {
	return []any{c.RequestID, c.JID, string(c.EffectiveProfile())}
}

// awaitLoop is the state of one wait for a verified final receipt (awaitFrom), kept in a struct so that
// a waiting request needs no goroutine: a request in flight is mostly waiting (for hours), and a parked
// goroutine per request (its stack, at least a few KiB once the publish path has run on it) is what
// thousands of them in flight would cost. A step runs until nothing is pending and returns; what makes the
// wait go on (a return or a gap on the waiter, the one timer, ctx ending) calls wakeup, and the owner
// runs step again: awaitFrom blocks on a channel between steps, awaitParked starts a goroutine only while
// there is work.
//
// The rules are awaitFrom's (see there): the poll budget, gap polls outside the budget and at most one per
// interval, early proofs at most one per interval, a pending proof asked for by the next poll, two unknown
// answers before believing one.
type awaitLoop struct {
	d        *Dispatcher
	ctx      context.Context
	c        *claims.Claim
	w        *waiter
	deadline time.Time

	// runNonce is the proof nonce the run publication carried ("" when it carried none: the module
	// does not sign its return, or this wait is an adopter's, a Resume's or a reconcile's, which never
	// published the run). runProofs counts the run-return proofs verified, at most maxRunProofs.
	runNonce  string
	runProofs int

	budget       int
	interval     time.Duration
	early        proofLimiter
	gapPolls     proofLimiter
	gapPoll      bool
	pendingProof bool
	pendingFence claims.ErrorCode // a refusal's code whose fence the limiter deferred to the next poll
	pollNow      bool
	unknownPolls int
	nextPoll     time.Time

	// ONE timer per waiting request, armed for the earlier of the end of the window and the next
	// scheduled poll; it only sets fired and calls wakeup.
	timer   *time.Timer
	armed   time.Time
	fired   atomic.Bool
	stopCtx func() bool
	wakeup  func()
	running atomic.Bool // awaitParked: a goroutine runs the steps
	onDone  func(*receipt.Receipt)
}

func (d *Dispatcher) newAwaitLoop(ctx context.Context, c *claims.Claim, w *waiter, deadline time.Time, pollFirst bool) *awaitLoop {
	interval := d.timers.PollInterval()
	return &awaitLoop{d: d, ctx: ctx, c: c, w: w, deadline: deadline, budget: d.timers.PollBudget,
		interval: interval, early: proofLimiter{interval: interval}, gapPolls: proofLimiter{interval: interval},
		pollNow: pollFirst, nextPoll: time.Now().Add(interval)}
}

// start arms the timer and connects the wake-ups (the waiter, ctx) to wakeup.
func (l *awaitLoop) start(wakeup func()) {
	l.wakeup = wakeup
	l.armed = earlier(l.deadline, l.nextPoll)
	l.timer = time.AfterFunc(time.Until(l.armed), func() { l.fired.Store(true); l.wakeup() })
	l.stopCtx = context.AfterFunc(l.ctx, wakeup)
	l.w.notify(wakeup)
}

// stop disconnects the wake-ups; the waiter itself is its owner's to close.
func (l *awaitLoop) stop() {
	l.timer.Stop()
	l.stopCtx()
	l.w.notify(nil)
	l.d.unverifiedSeen.Delete(l.c.RequestID)
}

// step works until the wait ends (done, with the receipt or nil) or nothing is pending (not done: the
// timer is armed and a wake-up will come). Each turn does the first thing due, in this order: a poll
// (poll), the end of ctx, the timer (timerFired), an event-bus gap (gap), a return (onReturn); with
// nothing left, it re-arms the timer and returns.
func (l *awaitLoop) step() (*receipt.Receipt, bool) {
	for {
		if l.pollNow {
			if r, done := l.poll(); done {
				return r, true
			}
			continue
		}
		if l.ctx.Err() != nil {
			return nil, true
		}
		if l.fired.Swap(false) {
			if l.timerFired() {
				return nil, true // the window is over
			}
			continue
		}
		select {
		case <-l.w.gaps:
			l.gap()
			continue
		case jr := <-l.w.rets:
			if r, done := l.onReturn(jr); done {
				return r, true
			}
			continue
		default:
		}
		if at := earlier(l.deadline, l.nextPoll); !at.Equal(l.armed) {
			l.armed = at
			l.timer.Reset(time.Until(at))
		}
		return nil, false
	}
}

// poll makes the poll that is due: out of the budget unless it is a gap poll (done, nil, once the budget
// is spent); a refusal's fence the limiter deferred, else the proof a return asked for, else a status
// poll (pollOnce). A terminal answer ends the wait, and so does a second unknown in a row (the first is
// asked again at once); anything else schedules the next poll.
func (l *awaitLoop) poll() (*receipt.Receipt, bool) {
	d, c, ctx := l.d, l.c, l.ctx
	l.pollNow = false
	if !l.gapPoll {
		if l.budget <= 0 {
			d.claimLog(c).Warn("poll budget spent")
			return nil, true
		}
		l.budget--
	}
	l.gapPoll = false
	if l.pendingFence != "" {
		code := l.pendingFence
		l.pendingFence = ""
		if r, done := l.fenceRefused(code); done {
			return r, true
		}
		l.nextPoll = time.Now().Add(l.interval)
		return nil, false
	}
	var r *receipt.Receipt
	if l.pendingProof {
		l.pendingProof = false
		r = d.prove(ctx, c, l.deadline)
	} else {
		r = d.pollOnce(ctx, c, l.deadline)
	}
	switch {
	case r != nil && r.Status.Terminal():
		return r, true
	case r != nil && r.Status == receipt.StatusUnknown:
		// The minion's record is partial or its worker is gone. Ask once more before believing it:
		// a poll can land between the minion's two claim writes.
		l.unknownPolls++
		if l.unknownPolls >= 2 {
			return r, true
		}
		l.pollNow = true
		return nil, false
	default:
		l.unknownPolls = 0
	}
	l.nextPoll = time.Now().Add(l.interval)
	return nil, false
}

// timerFired handles the timer: true when the window is over, else a scheduled poll is made due if its
// time has come, and the timer is re-armed by step.
func (l *awaitLoop) timerFired() bool {
	now := time.Now()
	if !now.Before(l.deadline) {
		return true
	}
	if !now.Before(l.nextPoll) {
		l.pollNow = true
	}
	l.armed = time.Time{} // fired: re-arm in step
	return false
}

// gap handles an event-bus gap: a poll at once, outside the budget, at most one per interval.
func (l *awaitLoop) gap() {
	if l.gapPolls.allow(time.Now()) {
		l.d.claimLog(l.c).Info("event gap; polling at once")
		l.pollNow, l.gapPoll = true, true
	}
}

// onReturn handles a return of c's JID from the event bus. The run's own return signed over the
// publication's nonce that verifies and binds to c (readReturn) is evidence: a terminal one ends the wait.
// Anything else is a hint only. A refusal is fenced (fenceRefused); a final-looking or unverified return
// (a run proof that does not verify among them: proof_invalid) asks the minion for its signed answer
// (prove), at most once per interval (the next scheduled poll asks otherwise); a running one changes
// nothing. Only a proven final answer ends the wait.
func (l *awaitLoop) onReturn(jr *salt.JobReturn) (*receipt.Receipt, bool) {
	d, c, ctx := l.d, l.c, l.ctx
	if code := refusalCode(c.MinionID, jr); code != "" {
		// The module's refusal (an error answer, nothing ran). It is a hint like any return: the
		// minion fences the publication and signs for it, and only that signed answer ends the wait.
		if !l.early.allow(time.Now()) {
			l.pendingFence = code // the next scheduled poll fences
			return nil, false
		}
		return l.fenceRefused(code)
	}
	r, proven, reason := l.readReturn(jr)
	if proven && r.Status.Terminal() {
		d.claimLog(c).Debug("worker: receipt proven by the run's own signed return")
		return r, true
	}
	if reason != "" {
		d.noteUnverified(ctx, c, reason)
	}
	if reason == "" && !final(r) {
		return nil, false // running: the minion is still at work; the schedule polls
	}
	if !l.early.allow(time.Now()) {
		l.pendingProof = true // the next scheduled poll asks for the proof
		return nil, false
	}
	p := d.prove(ctx, c, l.deadline)
	if p != nil && final(p) {
		return p, true
	}
	if reason == "" {
		d.noteUnverified(ctx, c, unverifiedUnproven) // a final-looking return its minion did not sign
	}
	return nil, false
}

// maxRunProofs bounds the run-return proofs one wait verifies (an RSA verification and a read of the
// minion's accepted key each): the real return comes once, and a forger flooding the bus with
// proof-shaped returns costs at most this many before they are read as bare hints.
const maxRunProofs = 4

// readReturn reads a return of c's JID: a proof-shaped one (the run's signed return, {receipt, alg,
// sig}) is verified when this wait knows the run's nonce (proven, or proof_invalid when it does not
// verify against the pinned key with that nonce or does not bind to c); without the nonce, or past
// maxRunProofs, its receipt is only a hint. Any other return is read by hint.
func (l *awaitLoop) readReturn(jr *salt.JobReturn) (r *receipt.Receipt, proven bool, reason string) {
	d, c := l.d, l.c
	if jr == nil || eventReason(c.MinionID, jr) != "" {
		r, reason = d.hint(c, jr)
		return r, false, reason
	}
	p, err := receiptproof.FromValue(jr.Return)
	if err != nil {
		r, reason = d.hint(c, jr) // a bare receipt (a module that does not sign, or a non-terminal answer)
		return r, false, reason
	}
	if l.runNonce != "" && l.runProofs < maxRunProofs {
		l.runProofs++
		if pr, ok := d.verifyFor(l.ctx, c, l.runNonce, p); ok {
			return pr, true, ""
		}
		return nil, false, unverifiedProof
	}
	if c.Binding().Check(p.Receipt) != nil {
		return nil, false, unverifiedNotReceipt
	}
	return &p.Receipt, false, ""
}

// fenceRefused follows a refusal hint with code: the minion fences the claim's publication and signs its
// answer (fence, then prove). A signed fenced receipt proves the run never started and never will: the
// wait ends with it, and the worker commits it as failed 0 of 1 with the refusal's code. A signed
// terminal receipt (the refusal was not the run's: it ran) ends the wait as any terminal one; anything
// else (running, not_started, no answer that counts) lets the wait go on.
func (l *awaitLoop) fenceRefused(code claims.ErrorCode) (*receipt.Receipt, bool) {
	d, c := l.d, l.c
	d.claimLog(c).Warn("worker: the minion refused the run; fencing it", slog.String("code", string(code)))
	r := d.fence(l.ctx, c)
	switch {
	case r != nil && r.Fenced():
		d.refusals.Store(c.RequestID, code)
		return r, true
	case r != nil && r.Status.Terminal():
		return r, true
	}
	return nil, false
}

// refusalCode reads a return of c's minion as the module's refusal of the run: an error answer (retcode
// not 0) whose text is an oduflow_job refusal, as Salt returns a CommandExecutionError ("ERROR:
// oduflow_job: ..."). It returns the refusal's code (runtime_guard_failed for "refusing to run
// unprotected", else minion_refused), or "" for anything else. Only the text's kind is read, never logged.
func refusalCode(minion string, jr *salt.JobReturn) claims.ErrorCode {
	if jr == nil || eventReason(minion, jr) != "" || jr.Retcode == 0 {
		return ""
	}
	s, ok := jr.Return.(string)
	if !ok {
		return ""
	}
	s = strings.TrimPrefix(s, "ERROR: ")
	if !strings.HasPrefix(s, "oduflow_job: ") {
		return ""
	}
	if strings.Contains(s, "refusing to run unprotected") {
		return claims.CodeRuntimeGuard
	}
	return claims.CodeMinionRefused
}

// pending: a wake-up came (or may have) since step last returned not done.
func (l *awaitLoop) pending() bool {
	return len(l.w.rets) > 0 || len(l.w.gaps) > 0 || l.fired.Load() || l.ctx.Err() != nil
}

// awaitParked is await without a goroutine while nothing happens: done gets the result (as await returns
// it) on a goroutine started for the last step. Steps never run concurrently.
// nonce is the run's proof nonce, as for await.
func (d *Dispatcher) awaitParked(ctx context.Context, c *claims.Claim, w *waiter, deadline time.Time, nonce string, done func(*receipt.Receipt)) {
	l := d.newAwaitLoop(ctx, c, w, deadline, false)
	l.runNonce = nonce
	l.onDone = done
	l.running.Store(true) // the first step runs below, before any wake-up can start another
	l.start(l.kick)
	go l.run()
}

func (l *awaitLoop) kick() {
	if l.running.CompareAndSwap(false, true) {
		go l.run()
	}
}

func (l *awaitLoop) run() {
	for {
		r, done := l.step()
		if done {
			l.stop()
			l.onDone(r)
			return
		}
		l.running.Store(false)
		// A wake-up between step's last look and the Store above found running set and did nothing:
		// look again, and go on unless another kick has already started a goroutine.
		if !l.pending() || !l.running.CompareAndSwap(false, true) {
			return
		}
	}
}

// eventReason classifies a return delivered for c's JID: "" when it looks like c's minion's own return
// (still only a hint), else the Unverified* reason it is never evidence.
func eventReason(minion string, jr *salt.JobReturn) string {
	switch {
	case jr.MinionID != minion:
		return unverifiedWrongMinion
	case jr.Cmd == "_minion_event":
		return unverifiedMinionEvent
	case jr.ID != jr.MinionID:
		return unverifiedIDMismatch
	}
	return ""
}

// hint reads a return of c's minion as a receipt bound to c (not yet evidence), or nil with the reason.
func (d *Dispatcher) hint(c *claims.Claim, jr *salt.JobReturn) (*receipt.Receipt, string) {
	if jr == nil {
		return nil, unverifiedNotReceipt
	}
	if reason := eventReason(c.MinionID, jr); reason != "" {
		return nil, reason
	}
	r, err := receipt.FromValue(jr.Return)
	if err != nil {
		return nil, unverifiedNotReceipt
	}
	if err := c.Binding().Check(r); err != nil {
		return nil, unverifiedNotReceipt
	}
	return &r, ""
}

// noteUnverified counts an event that is never evidence and logs the first one of each request (the
// reason and the two validated identities only: the data is untrusted).
func (d *Dispatcher) noteUnverified(ctx context.Context, c *claims.Claim, reason string) {
	d.hooks.unverifiedEvent(withRequest(ctx, refOf(c)), reason)
	if _, seen := d.unverifiedSeen.LoadOrStore(c.RequestID, struct{}{}); !seen {
		d.claimLog(c).Warn("unverified return ignored (not evidence); later ones are only counted",
			slog.String("reason", reason))
	}
}
