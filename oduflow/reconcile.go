package oduflow

import (
	"context"
	"log/slog"
	"strings"
	"time"
	"unicode"

	"github.com/cockroachdb/errors"

	"github.com/oduflow/oduflow-go/internal/errmark"
	"github.com/oduflow/oduflow-go/oduflow/claims"
	"github.com/oduflow/oduflow-go/receipt"
	"github.com/oduflow/oduflow-go/salt"
)

// Reconciliation is what an operator brings to Reconcile: FromMinion or Assert.
type Reconciliation interface{ evidence() }

// FromMinion asks the library to fetch the minion's exact receipt through oduflow_job.status. A Receipt
// supplied here counts only if it equals that live reply.
type FromMinion struct {
	Receipt *receipt.Receipt
}

// Assert records an outcome the operator established by other means. It becomes the terminal phase
// asserted (who, why) and never counts as a minion receipt: not for custom digest reuse, not as a
// completed initial configuration.
type Assert struct {
	Outcome       receipt.Status // succeeded or failed
	Passed, Total int            // optional figures
	Who, Why      string
}

func (FromMinion) evidence() {}
func (Assert) evidence()     {}

// maxAssertText bounds Assert.Who and Assert.Why.
const maxAssertText = 512

// Reconcile resolves an unknown request explicitly (operator only) and so releases the quarantine it
// causes. It never publishes a state run. Only unknown requests can be reconciled (ErrNotUnknown), with
// one exception: FromMinion also resolves a request in phase asserted, replacing the operator's assertion
// by the minion's exact terminal receipt (evidence reconciled; AssertedBy/AssertedWhy stay for audit), so
// that the master's record holds the stronger evidence.
func (d *Dispatcher) Reconcile(ctx context.Context, minion, request string, ev Reconciliation) (_ Response, err error) {
	defer errmark.Boundary(&err)
	t, err := d.parseTarget(minion, request)
	if err != nil {
		return Response{}, err
	}
	_, fromMinion := ev.(FromMinion)
	c, err := d.reconcilableClaim(ctx, t, fromMinion)
	if err != nil {
		return Response{}, err
	}
	ctx = withRequest(ctx, refOf(c))
	lg := d.claimLog(c)
	switch e := ev.(type) {
	case Assert:
		if err := e.validate(); err != nil {
			return Response{}, err
		}
		if !c.Legacy() && c.WasDispatched() {
			// The publication may still reach the minion (a paused worker): an assertion that lifts the
			// quarantine is recorded only once the minion confirms the fence, so it can never run later.
			r := d.fence(ctx, c)
			switch {
			case r == nil:
				return Response{}, errors.Wrap(ErrNotFenced, "oduflow: reconcile by assertion")
			case r.Status.Terminal():
				// The minion's signed receipt (fenced: never ran) is stronger than an assertion.
				return d.recordMinionReceipt(ctx, c, r)
			case r.Status != receipt.StatusUnknown && r.Status != receipt.StatusRunning:
				return Response{}, errors.Wrapf(ErrNotFenced, "oduflow: reconcile by assertion: minion reports %s",
					errors.Safe(string(r.Status)))
			}
			// running or unknown: the run started (and may still go on, or its worker is gone); the fence
			// is recorded, so the publication can never start again.
		}
		out, err := d.commitFromUnknown(ctx, c, false, func(n *claims.Claim) {
			now := d.clock.Now()
			n.Phase, n.Status, n.Passed, n.Total = claims.PhaseAsserted, e.Outcome, e.Passed, e.Total
			n.ErrorCode, n.Evidence, n.FinishedAt = claims.CodeAsserted, evidenceAsserted, &now
			n.AssertedBy, n.AssertedWhy = e.Who, e.Why
		})
		if err != nil {
			return Response{}, err
		}
		lg.Warn("reconciled by assertion", slog.String("status", string(e.Outcome)),
			slog.String("asserted_by", e.Who))
		d.hooks.outcome(ctx, out, out.Status, claims.CodeAsserted)
		return d.respond(ctx, out)
	case FromMinion:
		if c.Legacy() {
			return Response{}, errors.Wrap(errLegacyClaim, "oduflow: reconcile from minion")
		}
		if e.Receipt != nil {
			if err := e.Receipt.Validate(); err != nil {
				return Response{}, invalid(err, "receipt")
			}
		}
		live := d.pollOnce(ctx, c, time.Now().Add(d.timers.CallTimeout)) // network I/O outside any lock
		if live != nil && live.Status == receipt.StatusNotStarted && c.WasDispatched() {
			// Not started yet is not "never": a paused worker may still publish. Fence the publication
			// first; the minion's signed answer afterwards is final (fenced: it never runs).
			live = d.fence(ctx, c)
		}
		switch {
		case live == nil:
			// Say which: an operator retries a minion that did not answer in time (a loaded minion, a
			// restarting master), but waits for one that reports the run going on.
			return Response{}, errors.Wrap(ErrUnresolved,
				"oduflow: reconcile from minion: no verified answer from the minion within the call timeout")
		case !live.Status.Terminal():
			return Response{}, errors.Wrapf(ErrUnresolved, "oduflow: reconcile from minion: minion reports %s",
				errors.Safe(string(live.Status)))
		}
		if e.Receipt != nil && *e.Receipt != *live {
			return Response{}, errEvidenceMismatch
		}
		return d.recordMinionReceipt(ctx, c, live)
	default:
		return Response{}, errmark.Mark(errors.New("oduflow: evidence must be FromMinion or Assert"), claims.ErrInvalidInput)
	}
}

// recordMinionReceipt commits the minion's verified terminal receipt live over the unresolved (or
// asserted) claim c: a fenced receipt as "never ran" (failed 0/1, never_ran, evidence fenced), any other
// as reconciled. A result committed meanwhile is kept.
func (d *Dispatcher) recordMinionReceipt(ctx context.Context, c *claims.Claim, live *receipt.Receipt) (Response, error) {
	wasAsserted := c.Phase == claims.PhaseAsserted
	out, err := d.commitMinionReceipt(ctx, c, live, evidenceReconciled)
	if err != nil {
		return Response{}, err
	}
	var code claims.ErrorCode
	if live.Fenced() {
		code = claims.CodeNeverRan
	}
	d.claimLog(c).Info("reconciled from the minion's receipt", slog.String("status", string(out.Status)),
		slog.String("code", string(code)), slog.Bool("replaced_assertion", wasAsserted))
	d.hooks.outcome(ctx, out, out.Status, code)
	return d.respond(ctx, out)
}

// commitMinionReceipt commits live over the unresolved (or asserted) claim c: a fenced receipt as
// "never ran" (failed 0/1, never_ran, evidence fenced), any other with evidence. A result committed
// meanwhile is kept.
func (d *Dispatcher) commitMinionReceipt(ctx context.Context, c *claims.Claim, live *receipt.Receipt, evidence string) (*claims.Claim, error) {
	return d.commitFromUnknown(ctx, c, true, func(n *claims.Claim) {
		now := d.clock.Now()
		// AssertedBy/AssertedWhy of a replaced assertion are kept for audit.
		if live.Fenced() {
			n.Phase, n.Status, n.Passed, n.Total = claims.PhaseTerminal, receipt.StatusFailed, 0, 1
			n.ErrorCode, n.Evidence, n.FinishedAt = claims.CodeNeverRan, evidenceFenced, &now
			return
		}
		n.Phase, n.Status, n.Passed, n.Total = claims.PhaseTerminal, live.Status, live.Passed, live.Total
		n.ErrorCode, n.Evidence, n.FinishedAt = "", evidence, &now
	})
}

// commitNeverRan records the minion's signed fenced receipt f over the adopted claim c: never ran.
func (d *Dispatcher) commitNeverRan(ctx context.Context, c *claims.Claim, f *receipt.Receipt) (*claims.Claim, error) {
	out, err := d.commitMinionReceipt(ctx, c, f, evidenceFenced)
	if err != nil {
		d.claimLog(c).Error("adoption: commit of never ran", slog.String("error", err.Error()))
		return nil, err
	}
	d.claimLog(c).Info("adoption: fenced before it started; never ran", slog.String("status", string(out.Status)))
	d.hooks.outcome(ctx, out, out.Status, claims.CodeNeverRan)
	return out, nil
}

// fence asks c's minion to fence the claim's publication, oduflow_job.fence(request_id, jid, profile,
// token) with the claim's fencing token (1 for a claim dispatched before fencing: the JID is fenced all
// the same), and returns the minion's verified signed answer afterwards (prove), or nil when either
// call got no answer that counts. The fence's own answer is a hint like any return: only the proof
// decides. Fenced, the publication never runs (a late run of it answers the fenced receipt), and the
// minion's mark is at least the token, so no publication with an earlier token starts either.
func (d *Dispatcher) fence(ctx context.Context, c *claims.Claim) *receipt.Receipt {
	token := max(c.FenceToken, 1)
	args := []any{c.RequestID, c.JID, string(c.EffectiveProfile()), int64(token)}
	jr, err := d.call(ctx, c.MinionID, funFence, args, d.timers.CallTimeout)
	if err != nil {
		d.claimLog(c).Info("fence without answer", slog.String("error", err.Error()))
		return nil
	}
	if _, reason := d.hint(c, jr); reason != "" {
		d.noteUnverified(ctx, c, reason)
		return nil // not a receipt of this publication (e.g. a minion without fencing)
	}
	return d.prove(ctx, c, time.Now().Add(d.timers.CallTimeout))
}

func (a Assert) validate() error {
	if a.Outcome != receipt.StatusSucceeded && a.Outcome != receipt.StatusFailed {
		return errmark.Mark(errors.New("oduflow: asserted outcome must be succeeded or failed"), claims.ErrInvalidInput)
	}
	if a.Passed < 0 || a.Total < 0 || a.Passed > a.Total ||
		(a.Outcome == receipt.StatusSucceeded && a.Passed != a.Total) {
		return errmark.Mark(errors.New("oduflow: asserted counts"), claims.ErrInvalidInput)
	}
	for _, s := range []string{a.Who, a.Why} {
		if strings.TrimSpace(s) == "" || len(s) > maxAssertText || strings.IndexFunc(s, unicode.IsControl) >= 0 {
			return errmark.Mark(errors.New("oduflow: asserted_by and asserted_reason must be short printable text"), claims.ErrInvalidInput)
		}
	}
	return nil
}

// unknownClaim reads the claim and requires its current status to be unknown.
func (d *Dispatcher) unknownClaim(ctx context.Context, t target) (*claims.Claim, error) {
	return d.reconcilableClaim(ctx, t, false)
}

// reconcilableClaim reads the claim and requires its current status to be unknown, or (allowAsserted) its
// phase to be asserted.
func (d *Dispatcher) reconcilableClaim(ctx context.Context, t target, allowAsserted bool) (*claims.Claim, error) {
	c, err := d.store.Get(ctx, t.request)
	if err != nil {
		return nil, err
	}
	if err := checkBinding(c, "", t.minion); err != nil {
		return nil, err
	}
	if allowAsserted && c.Phase == claims.PhaseAsserted {
		return c, nil
	}
	c, st, err := d.computeStatus(ctx, c)
	if err != nil {
		return nil, err
	}
	if st != receipt.StatusUnknown {
		return nil, errors.Wrapf(ErrNotUnknown, "status %s", errors.Safe(string(st)))
	}
	return c, nil
}

// Resume continues status polling of an unknown, dispatched protocol-1 request for another window (the
// timers' execution wait and poll budget). A trustworthy terminal receipt replaces unknown with its final
// summary (and so releases the quarantine). It never publishes a state run and never creates a request.
// It records the resume time in the claim (ResumedAt) and returns the current status; the polling runs in
// the background: in-process (see Wait), or, with Detached workers, in a worker process started with the
// same two identities, which decides from the persisted claim that it must poll. A detached Resume
// returns once that worker holds the request lock (follow it with WorkerActive), so a short-lived tool can
// exit at once. When a worker already holds the request lock (it is still polling), Resume only answers.
func (d *Dispatcher) Resume(ctx context.Context, minion, request string) (resp Response, err error) {
	defer errmark.Boundary(&err)
	t, err := d.parseTarget(minion, request)
	if err != nil {
		return Response{}, err
	}
	ctx = withRequest(ctx, RequestRef{Minion: t.minion, RequestID: t.request})
	err = d.admitNew(func() error {
		resp, err = d.resume(ctx, t)
		return err
	})
	return resp, err
}

// resume is Resume once admitted (Close waits for it).
func (d *Dispatcher) resume(ctx context.Context, t target) (Response, error) {
	c, err := d.resumable(ctx, t)
	if err != nil {
		return Response{}, err
	}
	if d.mode.detached {
		if held, err := d.leases.RequestLockHeld(ctx, t.request); err != nil {
			return Response{}, err
		} else if held {
			return d.respond(ctx, c) // a worker or another Resume is polling
		}
		if c, err = d.markResumed(ctx, c); err != nil {
			return Response{}, err
		}
		if !unresolved(c) {
			return d.respond(ctx, c) // resolved meanwhile
		}
		return d.resumeDetached(ctx, c)
	}
	lk, err := d.tryRequestLock(ctx, t.request)
	if err != nil {
		if errors.Is(err, claims.ErrLeaseBusy) {
			return d.respond(ctx, c) // a worker or another Resume is polling
		}
		return Response{}, err
	}
	if c, err = d.markResumed(ctx, c); err != nil || !unresolved(c) {
		_ = lk.Release()
		if err != nil {
			return Response{}, err
		}
		return d.respond(ctx, c)
	}
	deadline := time.Now().Add(d.timers.ExecutionWait)
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		defer func() { _ = lk.Release() }()
		d.resumePolling(d.ctx, c, deadline)
	}()
	return d.respond(ctx, c)
}

// resumable reads the claim and requires what Resume polls: a protocol-1 request that blocks its client
// (blocksClient: dispatched, unknown), so that Resume accepts exactly what Quarantine lists. Unknown but
// never dispatched is ErrNotUnknown (nothing to poll: nothing was published); legacy is ErrUnresolved.
func (d *Dispatcher) resumable(ctx context.Context, t target) (*claims.Claim, error) {
	c, err := d.unknownClaim(ctx, t)
	if err != nil {
		return nil, err
	}
	if c.Legacy() {
		return nil, errors.Wrap(errLegacyClaim, "oduflow: resume")
	}
	if !c.WasDispatched() {
		return nil, errors.Wrap(ErrNotUnknown, "oduflow: never dispatched; nothing to resume")
	}
	return c, nil
}

// unresolved: the claim has no final result other than unknown (and is not asserted).
func unresolved(c *claims.Claim) bool {
	return !c.Phase.Final() || (c.Phase == claims.PhaseTerminal && c.Status == receipt.StatusUnknown)
}

// markResumed records the resume time (fenced update). A claim resolved meanwhile is returned unchanged.
func (d *Dispatcher) markResumed(ctx context.Context, c *claims.Claim) (*claims.Claim, error) {
	out, _, err := d.updateClaim(ctx, c, func(next *claims.Claim) bool {
		if !unresolved(next) {
			return false
		}
		now := d.clock.Now()
		next.ResumedAt = &now
		return true
	})
	return out, err
}

// resumeWindow reports whether a worker that found claim c past phase claimed must poll it: an unresolved,
// dispatched protocol-1 claim whose window (Timers.ExecutionWait from its dispatch or its latest Resume) is still
// open. It returns the real-time deadline of the polling.
func (d *Dispatcher) resumeWindow(c *claims.Claim) (time.Time, bool) {
	if c.Legacy() || !c.WasDispatched() || !unresolved(c) {
		return time.Time{}, false
	}
	var from time.Time
	if c.DispatchedAt != nil {
		from = *c.DispatchedAt
	}
	if c.ResumedAt != nil && c.ResumedAt.After(from) {
		from = *c.ResumedAt
	}
	left := from.Add(d.timers.ExecutionWait).Sub(d.clock.Now())
	if left <= 0 {
		return time.Time{}, false
	}
	if left > d.timers.ExecutionWait {
		left = d.timers.ExecutionWait // clocks of different processes may disagree
	}
	return time.Now().Add(left), true
}

func (d *Dispatcher) resumePolling(ctx context.Context, c *claims.Claim, deadline time.Time) {
	lg := d.claimLog(c)
	lg.Info("resume: polling the minion")
	w, err := d.hub.watch(ctx, salt.JID(c.JID)) // a late return of the run counts too
	if err != nil {
		lg.Warn("resume: event bus unavailable", slog.String("error", err.Error()))
		return
	}
	defer w.close()
	r := d.awaitFrom(ctx, c, w, deadline, true) // an operator asked: poll at once, then on the schedule
	d.refusals.Delete(c.RequestID)              // a fenced refusal commits as fenced here (replaceUnknown)
	if r == nil || !r.Status.Terminal() {
		lg.Info("resume: no terminal receipt; still unknown")
		return
	}
	_ = d.replaceUnknown(ctx, c, r, "resume") // logged there
}

// Quarantine lists the client's requests that block new dispatches: dispatched, no final result other
// than unknown, and reading unknown (blocksClient; legacy ones included). Empty means the client is
// clear: a new request's preflight is then not refused quarantined, and Resume accepts exactly the
// protocol-1 requests listed here (docs/ARCHITECTURE.md, One answer for a client).
func (d *Dispatcher) Quarantine(ctx context.Context, minion string) (_ []Response, err error) {
	defer errmark.Boundary(&err)
	if err := d.table.ValidateMinionID(minion); err != nil {
		return nil, invalid(err, "minion id")
	}
	cs, err := listUnresolved(ctx, d.store, minion)
	if err != nil {
		return nil, err
	}
	var out []Response
	for _, c := range cs {
		if !c.Quarantining() {
			continue
		}
		r, err := d.respond(ctx, c)
		if err != nil {
			return nil, err
		}
		if blocksClient(c, r.Status) {
			out = append(out, r)
		}
	}
	return out, nil
}
