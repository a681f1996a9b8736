package oduflow

import (
	"context"
	"log/slog"
	"time"

	"github.com/cockroachdb/errors"

	"github.com/oduflow/oduflow-go/oduflow/claims"
	"github.com/oduflow/oduflow-go/receipt"
)

// closeCommitTimeout bounds each claim write Close makes after its drain deadline (the dispatcher_closed
// commits of workers that never reached their dispatch intent).
const closeCommitTimeout = 10 * time.Second

// Close drains the Dispatcher and releases everything it holds (docs/ARCHITECTURE.md, Lifecycle):
//
//  1. it stops admitting at once: a Start, CustomStart or Resume that would write or launch anything
//     gets an error matching ErrClosed (nothing written); the adoption loop stops taking requests;
//  2. it lets the in-process workers and adoptions in flight finish until ctx ends (a ctx already done
//     drains nothing);
//  3. then it cancels the rest: a worker that has not recorded its dispatch intent commits its claim
//     failed (dispatcher_closed; nothing was published: it still held the request lock), one past its
//     intent stops waiting and releases its request lock and client lease, so that its request becomes
//     adoptable by any Dispatcher sharing the claim store (WithAdoption), which polls it through the
//     minion's signed receipt and never publishes it again;
//  4. it closes the shared event subscription (and the worker log New opened).
//
// Detached workers are processes of their own and go on. Close returns ctx's error when the drain was
// cut short (the work left was released as in 3), nil when everything in flight finished. Status,
// Lookup, Quarantine and Unresolved still answer after Close (they only read the claim store); calling
// Close again waits for the first call's release.
func (d *Dispatcher) Close(ctx context.Context) error {
	d.gate.Lock()
	first := !d.closing
	d.closing = true
	d.gate.Unlock()
	if first {
		close(d.draining) // the adoption loop stops; workers see it when their context ends
	}
	done := make(chan struct{})
	go func() { d.wg.Wait(); close(done) }()
	var drainErr error
	select {
	case <-done: // nothing (left) in flight
	default:
		select {
		case <-done:
		case <-ctx.Done():
			drainErr = errors.Wrap(ctx.Err(), "oduflow: close: drain cut short; the rest is released for adoption")
		}
	}
	d.cancel()
	<-done
	d.feedWG.Wait() // the store's change feed (watch.go) ends with the context
	d.hub.close()
	var err error
	if d.ownLog {
		d.closeLog.Do(func() { err = d.workerLogFile.Close() })
	}
	if drainErr != nil {
		return drainErr
	}
	return err
}

// admitNew runs f (which writes a claim or launches a worker) unless the Dispatcher is draining or closed
// (ErrClosed, nothing done). f runs under the read side of the gate: Close waits for it, so every worker
// f launches is counted before Close waits for the workers in flight.
func (d *Dispatcher) admitNew(f func() error) error {
	d.gate.RLock()
	defer d.gate.RUnlock()
	if d.closing {
		return errors.Wrap(ErrClosed, "oduflow: not admitting new requests")
	}
	return f()
}

// isClosing reports whether Close has begun.
func (d *Dispatcher) isClosing() bool {
	d.gate.RLock()
	defer d.gate.RUnlock()
	return d.closing
}

// failClosed runs when a worker returns: if its context ended because the Dispatcher closed, it still
// holds the request lock and the claim is still in phase claimed, the claim is committed failed
// (dispatcher_closed, evidence preflight): without its intent nothing can have been published, and
// leaving it claimed would make it read running, then unknown, for a request that never left. A claim
// past phase claimed is left as it is (adoptable once the lock is released).
func (d *Dispatcher) failClosed(ctx context.Context, t target, reqLock claims.Lease) {
	if ctx.Err() == nil || !d.isClosing() || !reqLock.Held() {
		return
	}
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), closeCommitTimeout)
	defer cancel()
	c, err := d.store.Get(wctx, t.request)
	if err != nil || c.Phase != claims.PhaseClaimed {
		return
	}
	out, changed, err := d.updateClaim(wctx, c, func(next *claims.Claim) bool {
		if next.Phase != claims.PhaseClaimed {
			return false
		}
		now := d.clock.Now()
		next.Phase, next.Status, next.Passed, next.Total = claims.PhaseTerminal, receipt.StatusFailed, 0, 1
		next.ErrorCode, next.Evidence, next.FinishedAt = claims.CodeDispatcherClosed, evidencePreflight, &now
		return true
	})
	if err != nil {
		d.claimLog(c).Error("close: commit of a request that was never dispatched", slog.String("error", err.Error()))
		return
	}
	if changed {
		d.claimLog(c).Info("close: request never dispatched; failed", slog.String("code", string(claims.CodeDispatcherClosed)))
		d.hooks.outcome(ctx, out, out.Status, claims.CodeDispatcherClosed)
	}
}
