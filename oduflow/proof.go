package oduflow

import (
	"context"
	"log/slog"
	"time"

	"github.com/oduflow/oduflow-go/internal/receiptproof"
	"github.com/oduflow/oduflow-go/receipt"
	"github.com/oduflow/oduflow-go/salt"
)

// Receipt proofs. Anyone who can fire an event on the master bus (any authenticated minion, through
// _minion_event) can put salt/job/<jid>/ret/<minion> there with any data, and every minion sees every
// publication, so request ids, JIDs and nonces are known to all of them. A return or a status answer is
// therefore only a hint. A final result is committed only from oduflow_job.attest: the minion's answer
// signed with its own Salt key over a fresh nonce, verified against the key the master accepted for
// that id (pinned in the claim at preflight) and bound to the claim.

// funAttest is the read-only function that answers a signed status.
const funAttest = "oduflow_job.attest"

// prove asks c's minion for its signed answer with a fresh nonce and returns the verified answer bound
// to c, or nil (no answer within the call timeout, the key unavailable or changed). Answers on the bus
// that do not verify are counted and skipped: the call keeps waiting for the real one.
func (d *Dispatcher) prove(ctx context.Context, c *Claim, deadline time.Time) *receipt.Receipt {
	t0 := time.Now()
	defer func() { d.hooks.observe("proof", time.Since(t0)) }()
	timeout := d.timers.CallTimeout
	if rem := time.Until(deadline); rem < timeout {
		timeout = rem
	}
	if timeout <= 0 {
		return nil
	}
	pub, err := d.minionKey(ctx, c)
	if err != nil {
		d.claimLog(c).Warn("receipt proof not verifiable: accepted minion key", slog.String("error", err.Error()))
		return nil
	}
	nonce := receiptproof.NewNonce()
	var proven receipt.Receipt
	accept := func(jr *salt.JobReturn) bool {
		p, err := receiptproof.FromValue(jr.Return)
		if err == nil {
			proven, err = receiptproof.Verify(pub, nonce, p)
		}
		if err == nil {
			err = c.Binding().Check(proven)
		}
		if err != nil {
			d.noteUnverified(c, unverifiedProof)
			return false
		}
		return true
	}
	args := append(statusArgs(c), nonce)
	if _, err := d.callAccept(ctx, c.MinionID, funAttest, args, timeout, accept); err != nil {
		d.claimLog(c).Info("receipt proof without answer", slog.String("error", err.Error()))
		return nil
	}
	return &proven
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
func (d *Dispatcher) hint(c *Claim, jr *salt.JobReturn) (*receipt.Receipt, string) {
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
func (d *Dispatcher) noteUnverified(c *Claim, reason string) {
	d.hooks.unverifiedEvent(reason)
	if _, seen := d.unverifiedSeen.LoadOrStore(c.RequestID, struct{}{}); !seen {
		d.claimLog(c).Warn("unverified return ignored (not evidence); later ones are only counted",
			slog.String("reason", reason))
	}
}

// proofLimiter allows at most one early proof request per poll interval for one wait: unverified or
// unconfirmed events ask for the signed answer early, but a flood of them cannot turn into a flood of
// calls, and never spends the poll budget.
type proofLimiter struct {
	interval time.Duration
	last     time.Time
}

func (l *proofLimiter) allow(now time.Time) bool {
	if !l.last.IsZero() && now.Sub(l.last) < l.interval {
		return false
	}
	l.last = now
	return true
}
