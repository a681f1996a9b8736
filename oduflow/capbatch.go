package oduflow

import (
	"context"
	"sync"
	"time"

	"github.com/cockroachdb/errors"

	"github.com/oduflow/oduflow-go/salt"
)

// Capability checks in batches. Every worker asks its minion for oduflow_job.capabilities before it
// records the intent: with one publication per check, a busy dispatcher makes two publications per
// request (the check and the run), and the master's request port, not the claim store, is what bounds
// its rate. Checks that wait at the same time therefore share one publication: one JID, a list target of
// their minions (at most capBatchMax), each minion's own return routed to its caller. At most
// capBatchPublishing batches are being published at once; checks that arrive meanwhile queue and go in
// the next one (group commit: an idle dispatcher sends a lone check at once, a busy one sends a few large
// ones). Nothing about a check changes: the same read-only call, the same answer per minion (only the
// minion's own return counts, as for a single call), the same timeout from the publication on. A batch
// whose event stream had a gap answers its unanswered callers with errCallGap, and each of them asks
// again alone (call). oduflow_job.run is never batched.
const (
	capBatchMax        = 64
	capBatchPublishing = 2
)

type capBatcher struct {
	mu         sync.Mutex
	queue      []*capWait
	publishing int // batches taken from the queue and not yet answered by the master
}

type capWait struct {
	minion string
	done   chan capAnswer // buffered: the batch never blocks on a caller that gave up
}

type capAnswer struct {
	jr  *salt.JobReturn
	err error
}

// batchedCall is call(minion, oduflow_job.capabilities) through a shared batch.
func (d *Dispatcher) batchedCall(ctx context.Context, minion string, timeout time.Duration) (*salt.JobReturn, error) {
	w := &capWait{minion: minion, done: make(chan capAnswer, 1)}
	b := &d.caps
	b.mu.Lock()
	b.queue = append(b.queue, w)
	start := b.publishing < capBatchPublishing
	if start {
		b.publishing++
	}
	b.mu.Unlock()
	if start {
		d.wg.Add(1)
		go d.publishBatches(timeout)
	}
	select {
	case a := <-w.done:
		return a.jr, a.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// publishBatches publishes batches from the queue until it is empty.
func (d *Dispatcher) publishBatches(timeout time.Duration) {
	defer d.wg.Done()
	b := &d.caps
	for {
		b.mu.Lock()
		if len(b.queue) == 0 {
			b.publishing--
			b.mu.Unlock()
			return
		}
		n := min(len(b.queue), capBatchMax)
		batch := append([]*capWait(nil), b.queue[:n]...)
		b.queue = append(b.queue[:0], b.queue[n:]...)
		b.mu.Unlock()
		d.publishBatch(batch, timeout)
	}
}

// publishBatch publishes one check to the batch's minions and hands the wait for their returns to a
// goroutine of its own, so that the next batch can be published meanwhile.
func (d *Dispatcher) publishBatch(batch []*capWait, timeout time.Duration) {
	byMinion := make(map[string][]*capWait, len(batch))
	minions := make([]string, 0, len(batch))
	for _, w := range batch {
		if _, ok := byMinion[w.minion]; !ok {
			minions = append(minions, w.minion)
		}
		byMinion[w.minion] = append(byMinion[w.minion], w)
	}
	answer := func(minion string, a capAnswer) {
		for _, w := range byMinion[minion] {
			w.done <- a
		}
		delete(byMinion, minion)
	}
	answerAll := func(err error) {
		for m := range byMinion {
			answer(m, capAnswer{err: err})
		}
	}
	ctx := d.ctx
	jid := d.jids.Next()
	wctx, cancel := context.WithTimeout(ctx, timeout) // bounds connecting to the event bus, if it must
	w, err := d.hub.watchN(wctx, jid, len(minions))
	cancel()
	if err != nil {
		answerAll(err)
		return
	}
	var deadline time.Time
	res, err := d.publishTo(ctx, salt.ListTarget(minions...), funCapabilities, nil, nil, jid, func() {
		deadline = time.Now().Add(timeout)
	})
	if err != nil {
		w.close()
		answerAll(err)
		return
	}
	matched := make(map[string]bool, len(res.Minions))
	for _, m := range res.Minions {
		matched[m] = true
	}
	for _, m := range minions {
		if !matched[m] {
			// The master matched it to nothing (key not accepted, unknown): what a call to it alone gets.
			answer(m, capAnswer{err: errors.Wrapf(salt.ErrNoMinions, "%s", errors.Safe(funCapabilities))})
		}
	}
	if len(byMinion) == 0 {
		w.close()
		return
	}
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		defer w.close()
		tm := time.NewTimer(time.Until(deadline))
		defer tm.Stop()
		for len(byMinion) > 0 {
			select {
			case <-ctx.Done():
				answerAll(ctx.Err())
			case <-tm.C:
				answerAll(errors.Wrapf(errNoReturn, "%s", errors.Safe(funCapabilities)))
			case <-w.gaps:
				// Events may have been missed: each caller still waiting asks again alone.
				answerAll(errors.Wrapf(errCallGap, "%s", errors.Safe(funCapabilities)))
			case r := <-w.rets:
				if _, ok := byMinion[r.MinionID]; !ok {
					d.hooks.unverifiedEvent(ctx, unverifiedWrongMinion)
					continue
				}
				if reason := eventReason(r.MinionID, r); reason != "" {
					d.hooks.unverifiedEvent(ctx, reason)
					continue
				}
				answer(r.MinionID, capAnswer{jr: r})
			}
		}
	}()
}
