package oduflow

import (
	"context"
	stderrors "errors"
	"iter"

	"github.com/cockroachdb/errors"

	"github.com/oduflow/oduflow-go/oduflow/claims"
	"github.com/oduflow/oduflow-go/receipt"
)

// listUnresolved reads the client's unresolved claims through the store's index when it has one, its
// whole history otherwise, and keeps only the unresolved ones.
func listUnresolved(ctx context.Context, st claims.ClaimStore, minionID string) ([]*claims.Claim, error) {
	var (
		cs  []*claims.Claim
		err error
	)
	if ul, ok := st.(claims.UnresolvedLister); ok {
		cs, err = ul.ListUnresolved(ctx, minionID)
	} else {
		cs, err = st.ListByClient(ctx, minionID)
	}
	if err != nil {
		return nil, err
	}
	out := cs[:0]
	for _, c := range cs {
		if c.Unresolved() {
			out = append(out, c)
		}
	}
	return out, nil
}

// errNoScanner: the claim store keeps no index of unresolved claims across clients.
var errNoScanner = errors.Wrap(stderrors.ErrUnsupported, "oduflow: the claim store cannot list unresolved requests across clients (no UnresolvedScanner)")

// UnresolvedRequest is one entry of Dispatcher.Unresolved.
type UnresolvedRequest struct {
	// Claim is a copy of the claim as read (identities, profile, phase, error code, times).
	Claim *claims.Claim
	// Status is the request's status by the status rules when it was read: running (a worker, an
	// adopter or a Resume holds it, or it is launching) or unknown.
	Status receipt.Status
	// Quarantining: the request blocks new dispatches to its client now (it was dispatched and reads
	// unknown): Quarantine lists it, a new request's preflight fails quarantined, Resume and Reconcile
	// accept it.
	Quarantining bool
}

// Unresolved lists every unresolved request across clients (claims not final, or final unknown and
// dispatched), for dashboards and operators: one claim-store scan in bounded batches (the store must
// implement UnresolvedScanner; otherwise the one error yielded matches errors.ErrUnsupported). It only
// reads. An error ends the sequence.
func (d *Dispatcher) Unresolved(ctx context.Context) iter.Seq2[UnresolvedRequest, error] {
	return func(yield func(UnresolvedRequest, error) bool) {
		for c, err := range d.scanUnresolved(ctx) {
			if err != nil {
				yield(UnresolvedRequest{}, err)
				return
			}
			c, st, err := d.computeStatus(ctx, c)
			if err != nil {
				yield(UnresolvedRequest{}, err)
				return
			}
			if !yield(UnresolvedRequest{Claim: c.Clone(), Status: st, Quarantining: blocksClient(c, st)}, nil) {
				return
			}
		}
	}
}

// scanUnresolved yields the unresolved claims of every client (UnresolvedScanner), resolved ones
// filtered out.
func (d *Dispatcher) scanUnresolved(ctx context.Context) iter.Seq2[*claims.Claim, error] {
	return func(yield func(*claims.Claim, error) bool) {
		sc, ok := d.store.(claims.UnresolvedScanner)
		if !ok {
			yield(nil, errNoScanner)
			return
		}
		for c, err := range sc.ScanUnresolved(ctx) {
			if err != nil {
				yield(nil, err)
				return
			}
			if c.Unresolved() && !yield(c, nil) {
				return
			}
		}
	}
}

// blocksClient is the one quarantine rule (docs/ARCHITECTURE.md, Quarantine and reconciliation): a
// request blocks new dispatches to its client when it was dispatched, has no final result other than
// unknown, and its status is unknown (no live worker, adopter or Resume holds it, or its window ran
// out). Quarantine lists exactly these, the preflight of a new request of the client fails quarantined
// exactly on these, and Resume and Reconcile accept exactly these.
func blocksClient(c *claims.Claim, st receipt.Status) bool {
	return c.Quarantining() && st == receipt.StatusUnknown
}
