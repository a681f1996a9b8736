package oduflow

import (
	"context"
	"log/slog"
	"time"

	"github.com/oduflow/oduflow-go/internal/receiptproof"
	"github.com/oduflow/oduflow-go/receipt"
)

// await waits until deadline for a verified final receipt of c. Returns of its JID on the event bus and
// oduflow_job.status polls on the expected minion (on a schedule spreading the poll budget over the
// window, and at once after every event-bus gap) are hints only: a final-looking one makes the worker ask
// the minion for its signed answer (oduflow_job.attest), and only a verified proof bound to the claim
// ends the wait. It returns nil when the window or the budget is spent, or ctx ends.
func (d *Dispatcher) await(ctx context.Context, c *Claim, w *waiter, deadline time.Time) *receipt.Receipt {
	return d.awaitFrom(ctx, c, w, deadline, false)
}

// awaitFrom is await; with pollFirst the first status poll is made at once (a Resume asks now).
//
// The poll budget is spent only by scheduled polls (and the repeat of an unknown answer); a gap poll is
// limited to one per interval instead, so that nothing a forger can trigger spends the budget.
//
// Events that are never evidence (see eventReason, and receipts that do not bind to c) are counted and
// logged once; they, and final-looking returns, trigger at most one early proof request per poll
// interval (proofLimiter), outside the poll budget: a forger flooding the bus can neither spend the
// budget (and force unknown) nor make the worker flood the minion.
func (d *Dispatcher) awaitFrom(ctx context.Context, c *Claim, w *waiter, deadline time.Time, pollFirst bool) *receipt.Receipt {
	l := d.newAwaitLoop(ctx, c, w, deadline, pollFirst)
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
func (d *Dispatcher) pollOnce(ctx context.Context, c *Claim, deadline time.Time) *receipt.Receipt {
	t0 := time.Now()
	defer func() { d.hooks.observe("poll", time.Since(t0)) }()
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
		d.noteUnverified(c, reason)
		return nil
	}
	if !final(r) {
		return r
	}
	return d.prove(ctx, c, deadline)
}

func statusArgs(c *Claim) []any {
	return []any{c.RequestID, c.JID, string(c.EffectiveProfile())}
}

// minionCaps is what oduflow_job.capabilities reported (all zero when unknown).
type minionCaps struct {
	Protocol    int
	PillarReady bool
	// Proof: the minion advertises receipt proofs with receiptproof.Alg and can sign (its key loads).
	Proof bool
}

// capabilities calls oduflow_job.capabilities on the minion. Its answer is not signed: a forged one can
// only make a preflight fail (no protocol, no proof), never make a request succeed, since every final
// result needs a verified proof.
func (d *Dispatcher) capabilities(ctx context.Context, minion string) (minionCaps, error) {
	t0 := time.Now()
	defer func() { d.hooks.observe("capabilities", time.Since(t0)) }()
	timeout := d.timers.CallTimeout
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) < timeout {
		timeout = time.Until(dl)
	}
	jr, err := d.call(ctx, minion, funCapabilities, nil, timeout)
	if err != nil {
		return minionCaps{}, err
	}
	return parseCapabilities(jr.Return), nil
}

// parseCapabilities reads {"protocol": 1, "pillar_ready": true, "proof": {"alg": ..., "ready": true},
// ...} tolerantly; anything else is zero. A proof with another algorithm is no proof (no fallback).
func parseCapabilities(v any) minionCaps {
	m, ok := v.(map[string]any)
	if !ok {
		return minionCaps{}
	}
	var caps minionCaps
	switch p := m["protocol"].(type) {
	case int64:
		caps.Protocol = int(p)
	case int:
		caps.Protocol = p
	case uint64:
		caps.Protocol = int(p)
	case float64:
		if p == float64(int(p)) {
			caps.Protocol = int(p)
		}
	}
	caps.PillarReady, _ = m["pillar_ready"].(bool)
	if pm, ok := m["proof"].(map[string]any); ok {
		alg, _ := pm["alg"].(string)
		ready, _ := pm["ready"].(bool)
		caps.Proof = alg == receiptproof.Alg && ready
	}
	return caps
}
