package claims

import (
	"context"
	"iter"
)

// Unresolved reports whether the claim belongs to its client's unresolved set: it has no final phase yet
// (claimed, dispatching, dispatched), or it quarantines its client (Quarantining: dispatched, with no
// final result other than unknown). Every claim that can block, or collide with, a new dispatch to its
// client is unresolved; a claim that is resolved never becomes unresolved again except through a
// transition the store records like any other (both stores keep the set exact at every transition).
func (c *Claim) Unresolved() bool { return !c.Phase.Final() || c.Quarantining() }

// UnresolvedLister is the optional index of a ClaimStore that keeps each client's unresolved claims
// apart from its history. The worker's preflight and Quarantine read only this set when the store has
// it, so their cost follows the client's open requests, not every request it ever had; without it they
// read ListByClient.
//
// The contract: ListUnresolved returns every claim of the client that is Unresolved, each as committed
// at some point during the call, and may return resolved ones too (callers filter). The set is
// maintained with the claim's own writes: an entry exists before (or atomically with) the claim's
// first unresolved state becoming visible, and is removed only after (or atomically with) a resolved
// state becoming durable. filestore.Store and etcdstore.Store implement it.
type UnresolvedLister interface {
	ListUnresolved(ctx context.Context, minionID string) ([]*Claim, error)
}

// UnresolvedScanner is the optional index of a ClaimStore that lists the unresolved claims of every
// client (oduflow's Dispatcher.Unresolved, and the adoption loop of WithAdoption, read it).
// ScanUnresolved yields every claim that is Unresolved when the scan begins and is still so when its
// entry is read, each as committed at some point during the scan, possibly resolved ones too (callers
// filter), in bounded batches: a large set is never held at once. An error ends the scan (yielded once,
// with a nil claim). filestore.Store (open/) and etcdstore.Store (a paged prefix read of the open
// index) implement it.
type UnresolvedScanner interface {
	ScanUnresolved(ctx context.Context) iter.Seq2[*Claim, error]
}
