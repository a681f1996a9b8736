package oduflow

import (
	"context"
	"log/slog"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/oduflow/oduflow-go/oduflow/claims"
	"github.com/oduflow/oduflow-go/receipt"
)

// Backoff between the re-reads of a claim whose intent write has an unknown outcome.
const (
	intentRetryFirst = 50 * time.Millisecond
	intentRetryMax   = time.Second
)

// settleIntent decides an intent write (next, from the claimed record of generation next.Generation)
// whose outcome is unknown, re-reading the claim with backoff for at most half the launch grace. It
// returns the claim to publish from and true only when the intent is proven to be this worker's:
//
//   - The claim is still claimed at generation next.Generation and both leases are held locally: the
//     same guarded write is retried. It is fenced on the same record, so at most one of the two writes
//     can commit (a late commit of the first fails its compare once the retry committed, and the other
//     way round); the retry's error, if any, is decided by the next read.
//   - The claim holds the intent exactly as this worker wrote it (dispatching, a later generation, the
//     same dispatch time and key): it is confirmed by one more guarded write of that very record. That
//     write commits only if both leases are still the ones this worker took; a lease once lost is never
//     held again, so the request lock was this worker's without interruption from before the claimed
//     read to the confirmation, and only a writer holding it can move a claim to dispatching. The intent
//     is therefore this attempt's, and nobody else can pass it (the claim is past claimed for good).
//   - Anything else (another phase or writer, a lost lease, the window over, the dispatcher closing):
//     false, nothing is published. Status reports the claim unknown once the request lock is free (a
//     recorded intent quarantines the client), and it is never published.
func (d *Dispatcher) settleIntent(ctx context.Context, next *claims.Claim, reqLock, lease claims.Lease) (*claims.Claim, bool) {
	lg := d.claimLog(next)
	deadline := time.Now().Add(d.timers.LaunchGrace / 2)
	wait := intentRetryFirst
	for attempt := 1; ; attempt++ {
		left := time.Until(deadline)
		if left <= 0 || !reqLock.Held() || !lease.Held() {
			lg.Warn("worker: dispatch intent outcome undecided; nothing published", slog.Int("attempts", attempt-1))
			return nil, false
		}
		select {
		case <-ctx.Done():
			return nil, false
		case <-time.After(min(wait, left)):
		}
		wait = min(2*wait, intentRetryMax)
		rctx, cancel := context.WithDeadline(ctx, deadline)
		out, decided, ok := d.intentAttempt(rctx, next, reqLock, lease)
		cancel()
		if decided {
			if ok {
				lg.Info("worker: dispatch intent confirmed after an unknown outcome", slog.Int("attempts", attempt))
			} else {
				lg.Warn("worker: dispatch intent not this worker's or leases lost; nothing published")
			}
			return out, ok
		}
	}
}

// intentAttempt is one read and at most one guarded write of settleIntent. decided is false when the
// next attempt must read again (a failed read, a conflict, another unknown outcome).
func (d *Dispatcher) intentAttempt(ctx context.Context, next *claims.Claim, reqLock, lease claims.Lease) (out *claims.Claim, decided, ok bool) {
	cur, err := d.store.Get(ctx, next.RequestID)
	if err != nil {
		return nil, false, false
	}
	var write *claims.Claim
	switch {
	case cur.Phase == claims.PhaseClaimed && cur.Generation == next.Generation:
		write = next // not committed as of this read: retry the same fenced write
	case ownIntent(cur, next):
		write = cur // committed, by this worker unless a lease was lost: confirm
	default:
		return nil, true, false
	}
	out, err = d.store.CompareAndSwapHeld(ctx, write, reqLock, lease)
	switch {
	case err == nil:
		d.watchers.changed(write.RequestID)
		return out, true, true
	case errors.Is(err, claims.ErrConflict), isOutcomeUnknown(err), errors.Is(err, claims.ErrClaimStore):
		return nil, false, false
	}
	return nil, true, false // ErrLeaseLost and anything else: cannot prove the intent is this worker's
}

// sameIdentity: a and b are the same request's claim as created, JID included (the identity fields a
// store never changes, and the file store's creation stamp).
func sameIdentity(a, b *claims.Claim) bool {
	return a.MinionID == b.MinionID && a.RequestID == b.RequestID && a.Profile == b.Profile &&
		a.Role == b.Role && a.StateDigest == b.StateDigest && a.JID == b.JID && a.PayloadRef == b.PayloadRef &&
		a.CreatedAt.Equal(b.CreatedAt) && a.Protocol == b.Protocol && a.CreatedClock == b.CreatedClock
}

// ownIntent reports whether cur is the dispatch intent next, as written (possibly re-confirmed).
func ownIntent(cur, next *claims.Claim) bool {
	return cur.Phase == claims.PhaseDispatching && cur.Generation > next.Generation &&
		cur.DispatchedAt != nil && next.DispatchedAt != nil && cur.DispatchedAt.Equal(*next.DispatchedAt) &&
		cur.MinionKeySHA256 == next.MinionKeySHA256 && sameIdentity(cur, next)
}

// finalize commits a final result unless someone else committed one meanwhile (which is kept).
func (d *Dispatcher) finalize(ctx context.Context, c *claims.Claim, st receipt.Status, passed, total int, code claims.ErrorCode, evidence string) *claims.Claim {
	lg := d.claimLog(c)
	out, changed, err := d.updateClaim(ctx, c, func(next *claims.Claim) bool {
		if next.Phase.Final() {
			return false
		}
		now := d.clock.Now()
		next.Phase, next.Status, next.Passed, next.Total = claims.PhaseTerminal, st, passed, total
		next.ErrorCode, next.Evidence, next.FinishedAt = code, evidence, &now
		return true
	})
	switch {
	case err != nil:
		lg.Error("finalize: commit", slog.String("error", err.Error()))
		return nil
	case !changed:
		lg.Info("finalize: keeping final result committed by someone else", slog.String("status", string(out.Status)))
		return out
	}
	d.hooks.outcome(ctx, out, st, code)
	if st != receipt.StatusSucceeded {
		d.forgetCaps(out.MinionID) // the next preflight of this minion asks it (capcache.go)
	}
	lg.Info("final result committed", slog.String("status", string(st)), slog.Int("passed", passed),
		slog.Int("total", total), slog.String("code", string(code)))
	return out
}

// commitFromUnknown applies mutate to the current claim if it is still unresolved (not final, or final
// unknown) or, with overAssertion, asserted, under a fenced update. A result committed meanwhile is kept.
func (d *Dispatcher) commitFromUnknown(ctx context.Context, c *claims.Claim, overAssertion bool, mutate func(*claims.Claim)) (*claims.Claim, error) {
	out, _, err := d.updateClaim(ctx, c, func(next *claims.Claim) bool {
		if next.Phase == claims.PhaseAsserted {
			if !overAssertion {
				return false
			}
		} else if next.Phase.Final() && next.Status != receipt.StatusUnknown {
			return false // resolved meanwhile; keep it
		}
		mutate(next)
		return true
	})
	return out, err
}

// replaceUnknown is the one way a trustworthy terminal receipt r replaces unknown (a worker after an
// outcome-unknown publish, a Resume's polling): it commits r's summary (evidence receipt) over the claim
// if it is still unresolved, keeps a result committed meanwhile, and counts and logs the replacement. who
// prefixes the log lines ("worker", "resume"). The error is already logged.
func (d *Dispatcher) replaceUnknown(ctx context.Context, c *claims.Claim, r *receipt.Receipt, who string) error {
	lg := d.claimLog(c)
	out, changed, err := d.updateClaim(ctx, c, func(next *claims.Claim) bool {
		if !unresolved(next) {
			return false // resolved meanwhile (or asserted); keep it
		}
		now := d.clock.Now()
		next.Phase, next.Status, next.Passed, next.Total = claims.PhaseTerminal, r.Status, r.Passed, r.Total
		next.ErrorCode, next.Evidence, next.FinishedAt = receiptCode(r), evidenceReceipt, &now
		return true
	})
	if err != nil {
		lg.Error(who+": commit of the minion's receipt over unknown", slog.String("error", err.Error()))
		return err
	}
	if changed {
		d.hooks.outcome(ctx, out, out.Status, "")
		lg.Info(who+": unknown replaced by the minion's receipt", slog.String("status", string(out.Status)))
	}
	return nil
}

// maxClaimUpdates bounds the fenced-update retries of one claim change (each retry follows a commit by
// someone else).
const maxClaimUpdates = 10

// updateClaim is the claim update of the worker, Reconcile and Resume: it reads the current claim, lets
// change edit a copy, and commits it under the fenced update (ClaimStore.CompareAndSwap), retrying when
// the generation moved on meanwhile. change returns false to leave the claim as it is: updateClaim then
// returns the current claim with changed false. It gives up with ErrConflict after maxClaimUpdates lost
// races.
//
// The stored claim must still be c's: the same identity, JID included (sameIdentity). A claim of that
// request id under another JID was re-created (a store edited or restored from an earlier copy) and is
// another run's record: no result of c's run is ever committed onto it (errClaimReplaced, matching
// ErrCorruptClaim).
func (d *Dispatcher) updateClaim(ctx context.Context, c *claims.Claim, change func(next *claims.Claim) bool) (out *claims.Claim, changed bool, err error) {
	for attempt := 0; attempt < maxClaimUpdates; attempt++ {
		cur, err := d.store.Get(ctx, c.RequestID)
		if err != nil {
			return nil, false, err
		}
		if !sameIdentity(cur, c) {
			return nil, false, errors.Wrapf(errClaimReplaced, "stored JID %s, this run's %s", errors.Safe(cur.JID), errors.Safe(c.JID))
		}
		next := cur.Clone()
		if !change(next) {
			return cur, false, nil
		}
		out, err := d.store.CompareAndSwap(ctx, next)
		if err == nil {
			d.watchers.changed(next.RequestID)
			return out, true, nil
		}
		if !errors.Is(err, claims.ErrConflict) {
			return nil, false, err
		}
	}
	return nil, false, claims.ErrConflict
}
