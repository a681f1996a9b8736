package oduflow

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/oduflow/oduflow-go/receipt"
)

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
	c        *Claim
	w        *waiter
	deadline time.Time

	budget       int
	interval     time.Duration
	early        proofLimiter
	gapPolls     proofLimiter
	gapPoll      bool
	pendingProof bool
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

func (d *Dispatcher) newAwaitLoop(ctx context.Context, c *Claim, w *waiter, deadline time.Time, pollFirst bool) *awaitLoop {
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
// timer is armed and a wake-up will come).
func (l *awaitLoop) step() (*receipt.Receipt, bool) {
	d, c, ctx := l.d, l.c, l.ctx
	for {
		if l.pollNow {
			l.pollNow = false
			if !l.gapPoll {
				if l.budget <= 0 {
					d.claimLog(c).Warn("poll budget spent")
					return nil, true
				}
				l.budget--
			}
			l.gapPoll = false
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
				continue
			default:
				l.unknownPolls = 0
			}
			l.nextPoll = time.Now().Add(l.interval)
			continue
		}
		if ctx.Err() != nil {
			return nil, true
		}
		if l.fired.Swap(false) {
			now := time.Now()
			if !now.Before(l.deadline) {
				return nil, true // the window is over
			}
			if !now.Before(l.nextPoll) {
				l.pollNow = true
			}
			l.armed = time.Time{} // fired: re-arm below
			continue
		}
		select {
		case <-l.w.gaps:
			if l.gapPolls.allow(time.Now()) {
				d.claimLog(c).Info("event gap; polling at once")
				l.pollNow, l.gapPoll = true, true
			}
			continue
		case jr := <-l.w.rets:
			r, reason := d.hint(c, jr)
			if reason != "" {
				d.noteUnverified(c, reason)
			}
			if reason == "" && !final(r) {
				continue // running: the minion is still at work; the schedule polls
			}
			if !l.early.allow(time.Now()) {
				l.pendingProof = true // the next scheduled poll asks for the proof
				continue
			}
			p := d.prove(ctx, c, l.deadline)
			if p != nil && final(p) {
				return p, true
			}
			if reason == "" {
				d.noteUnverified(c, unverifiedUnproven) // a final-looking return its minion did not sign
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

// pending: a wake-up came (or may have) since step last returned not done.
func (l *awaitLoop) pending() bool {
	return len(l.w.rets) > 0 || len(l.w.gaps) > 0 || l.fired.Load() || l.ctx.Err() != nil
}

// awaitParked is await without a goroutine while nothing happens: done gets the result (as await returns
// it) on a goroutine started for the last step. Steps never run concurrently.
func (d *Dispatcher) awaitParked(ctx context.Context, c *Claim, w *waiter, deadline time.Time, done func(*receipt.Receipt)) {
	l := d.newAwaitLoop(ctx, c, w, deadline, false)
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
