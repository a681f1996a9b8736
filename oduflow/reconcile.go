package oduflow

import (
	"context"
	"log/slog"
	"strings"
	"time"
	"unicode"

	"github.com/cockroachdb/errors"

	"github.com/oduflow/oduflow-go/receipt"
	"github.com/oduflow/oduflow-go/salt"
)

// Evidence is what an operator brings to Reconcile: FromMinion or Assert.
type Evidence interface{ evidence() }

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

// MaxAssertText bounds Assert.Who and Assert.Why.
const MaxAssertText = 512

// Reconcile resolves an unknown request explicitly (operator only) and so releases the quarantine it
// causes. It never publishes a state run. Only unknown requests can be reconciled (ErrNotUnknown).
func (d *Dispatcher) Reconcile(ctx context.Context, minion, request string, ev Evidence) (Response, error) {
	if err := validateIDs(minion, request); err != nil {
		return Response{}, err
	}
	c, err := d.unknownClaim(ctx, minion, request)
	if err != nil {
		return Response{}, err
	}
	lg := d.claimLog(c)
	switch e := ev.(type) {
	case Assert:
		if err := e.validate(); err != nil {
			return Response{}, err
		}
		out, err := d.commitFromUnknown(ctx, c, func(n *Claim) {
			now := d.clock.Now()
			n.Phase, n.Status, n.Passed, n.Total = PhaseAsserted, e.Outcome, e.Passed, e.Total
			n.ErrorCode, n.Evidence, n.FinishedAt = CodeAsserted, EvidenceAsserted, &now
			n.AssertedBy, n.AssertedWhy = e.Who, e.Why
		})
		if err != nil {
			return Response{}, err
		}
		lg.Warn("reconciled by assertion", slog.String("status", string(e.Outcome)),
			slog.String("asserted_by", e.Who))
		d.hooks.Outcome(out.EffectiveProfile(), out.Status, CodeAsserted)
		return d.respond(ctx, out)
	case FromMinion:
		if c.Legacy() != NotLegacy {
			return Response{}, errors.Wrap(ErrLegacyClaim, "oduflow: reconcile from minion")
		}
		if e.Receipt != nil {
			if err := e.Receipt.Validate(); err != nil {
				return Response{}, invalid(err, "receipt")
			}
		}
		live := d.pollOnce(ctx, c, time.Now().Add(d.timers.CallTimeout)) // network I/O outside any lock
		if live == nil || !live.Status.Terminal() {
			return Response{}, ErrUnresolved
		}
		if e.Receipt != nil && *e.Receipt != *live {
			return Response{}, ErrEvidenceMismatch
		}
		out, err := d.commitFromUnknown(ctx, c, func(n *Claim) {
			now := d.clock.Now()
			n.Phase, n.Status, n.Passed, n.Total = PhaseTerminal, live.Status, live.Passed, live.Total
			n.ErrorCode, n.Evidence, n.FinishedAt = "", EvidenceReconciled, &now
		})
		if err != nil {
			return Response{}, err
		}
		lg.Info("reconciled from the minion's receipt", slog.String("status", string(live.Status)))
		d.hooks.Outcome(out.EffectiveProfile(), out.Status, "")
		return d.respond(ctx, out)
	default:
		return Response{}, errors.Mark(errors.New("oduflow: evidence must be FromMinion or Assert"), ErrInvalidInput)
	}
}

func (a Assert) validate() error {
	if a.Outcome != receipt.StatusSucceeded && a.Outcome != receipt.StatusFailed {
		return errors.Mark(errors.New("oduflow: asserted outcome must be succeeded or failed"), ErrInvalidInput)
	}
	if a.Passed < 0 || a.Total < 0 || a.Passed > a.Total ||
		(a.Outcome == receipt.StatusSucceeded && a.Passed != a.Total) {
		return errors.Mark(errors.New("oduflow: asserted counts"), ErrInvalidInput)
	}
	for _, s := range []string{a.Who, a.Why} {
		if strings.TrimSpace(s) == "" || len(s) > MaxAssertText || strings.IndexFunc(s, unicode.IsControl) >= 0 {
			return errors.Mark(errors.New("oduflow: asserted_by and asserted_reason must be short printable text"), ErrInvalidInput)
		}
	}
	return nil
}

// unknownClaim reads the claim and requires its current status to be unknown.
func (d *Dispatcher) unknownClaim(ctx context.Context, minion, request string) (*Claim, error) {
	c, err := d.store.Get(ctx, request)
	if err != nil {
		return nil, err
	}
	if err := checkBinding(c, "", minion); err != nil {
		return nil, err
	}
	st, err := d.computeStatus(ctx, c)
	if err != nil {
		return nil, err
	}
	if st != receipt.StatusUnknown {
		return nil, errors.Wrapf(ErrNotUnknown, "status %s", errors.Safe(string(st)))
	}
	return c, nil
}

// commitFromUnknown applies mutate to the current claim if it is still unresolved (not final, or final
// unknown), under a fenced update.
func (d *Dispatcher) commitFromUnknown(ctx context.Context, c *Claim, mutate func(*Claim)) (*Claim, error) {
	for attempt := 0; attempt < 10; attempt++ {
		cur, err := d.store.Get(ctx, c.RequestID)
		if err != nil {
			return nil, err
		}
		if cur.Phase.Final() && cur.Status != receipt.StatusUnknown {
			return cur, nil // resolved meanwhile; keep it
		}
		if cur.Phase == PhaseAsserted {
			return cur, nil
		}
		next := cur.clone()
		mutate(next)
		out, err := d.store.CompareAndSwap(ctx, next)
		if err == nil {
			return out, nil
		}
		if !errors.Is(err, ErrConflict) {
			return nil, err
		}
	}
	return nil, ErrConflict
}

// Resume continues status polling of an unknown, dispatched protocol-1 request for another window (the
// timers' execution wait and poll budget). A trustworthy terminal receipt replaces unknown with its final
// summary (and so releases the quarantine). It never publishes a state run and never creates a request.
// It returns the current status; the polling runs in the background (see Wait).
func (d *Dispatcher) Resume(ctx context.Context, minion, request string) (Response, error) {
	if err := validateIDs(minion, request); err != nil {
		return Response{}, err
	}
	c, err := d.unknownClaim(ctx, minion, request)
	if err != nil {
		return Response{}, err
	}
	if c.Legacy() != NotLegacy {
		return Response{}, errors.Wrap(ErrLegacyClaim, "oduflow: resume")
	}
	if !c.WasDispatched() {
		return Response{}, errors.Wrap(ErrNotUnknown, "oduflow: never dispatched; nothing to resume")
	}
	lk, err := d.tryRequestLock(ctx, request)
	if err != nil {
		if errors.Is(err, ErrLeaseHeld) {
			return d.respond(ctx, c) // a worker or another Resume is polling
		}
		return Response{}, err
	}
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		defer func() { _ = lk.Release() }()
		d.resumePolling(d.ctx, c)
	}()
	return d.respond(ctx, c)
}

func (d *Dispatcher) resumePolling(ctx context.Context, c *Claim) {
	lg := d.claimLog(c)
	lg.Info("resume: polling the minion")
	w, err := d.hub.watch(ctx, salt.JID(c.JID)) // a late return of the run counts too
	if err != nil {
		lg.Warn("resume: event bus unavailable", slog.String("error", err.Error()))
		return
	}
	defer w.close()
	r := d.await(ctx, c, w, time.Now().Add(d.timers.ExecutionWait))
	if r == nil || !r.Status.Terminal() {
		lg.Info("resume: no terminal receipt; still unknown")
		return
	}
	out, err := d.commitFromUnknown(ctx, c, func(n *Claim) {
		now := d.clock.Now()
		n.Phase, n.Status, n.Passed, n.Total = PhaseTerminal, r.Status, r.Passed, r.Total
		n.ErrorCode, n.Evidence, n.FinishedAt = "", EvidenceReceipt, &now
	})
	if err != nil {
		lg.Error("resume: commit", slog.String("error", err.Error()))
		return
	}
	d.hooks.Outcome(out.EffectiveProfile(), out.Status, "")
	lg.Info("resume: unknown replaced by the minion's receipt", slog.String("status", string(out.Status)))
}

// Quarantine lists the client's requests that block new dispatches (unresolved dispatched requests, legacy
// ones included). Empty means the client is clear.
func (d *Dispatcher) Quarantine(ctx context.Context, minion string) ([]Response, error) {
	if err := receipt.ValidateMinionID(minion); err != nil {
		return nil, invalid(err, "minion id")
	}
	cs, err := d.store.ListByClient(ctx, minion)
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
		if r.Status == receipt.StatusUnknown {
			out = append(out, r)
		}
	}
	return out, nil
}
