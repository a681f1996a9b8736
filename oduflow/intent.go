package oduflow

import (
	"context"
	"log/slog"
	"time"

	"github.com/cockroachdb/errors"
)

// outcomeUnknownError is how a ClaimStore marks a write whose acknowledgement was lost (it may have
// committed): some error in the chain has OutcomeUnknown() reporting true (etcdstore's writes do). The
// behaviour is matched rather than a sentinel so that this package needs no store's import.
type outcomeUnknownError interface{ OutcomeUnknown() bool }

func isOutcomeUnknown(err error) bool {
	var ou outcomeUnknownError
	return errors.As(err, &ou) && ou.OutcomeUnknown()
}

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
func (d *Dispatcher) settleIntent(ctx context.Context, next *Claim, reqLock, lease Lease) (*Claim, bool) {
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
func (d *Dispatcher) intentAttempt(ctx context.Context, next *Claim, reqLock, lease Lease) (out *Claim, decided, ok bool) {
	cur, err := d.store.Get(ctx, next.RequestID)
	if err != nil {
		return nil, false, false
	}
	var write *Claim
	switch {
	case cur.Phase == PhaseClaimed && cur.Generation == next.Generation:
		write = next // not committed as of this read: retry the same fenced write
	case ownIntent(cur, next):
		write = cur // committed, by this worker unless a lease was lost: confirm
	default:
		return nil, true, false
	}
	out, err = d.store.CompareAndSwapHeld(ctx, write, reqLock, lease)
	switch {
	case err == nil:
		return out, true, true
	case errors.Is(err, ErrConflict), isOutcomeUnknown(err), errors.Is(err, ErrClaimStore):
		return nil, false, false
	}
	return nil, true, false // ErrLeaseLost and anything else: cannot prove the intent is this worker's
}

// ownIntent reports whether cur is the dispatch intent next, as written (possibly re-confirmed).
func ownIntent(cur, next *Claim) bool {
	return cur.Phase == PhaseDispatching && cur.Generation > next.Generation &&
		cur.DispatchedAt != nil && next.DispatchedAt != nil && cur.DispatchedAt.Equal(*next.DispatchedAt) &&
		cur.MinionKeySHA256 == next.MinionKeySHA256 && sameIdentity(cur, next)
}
