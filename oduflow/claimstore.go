package oduflow

import (
	"github.com/cockroachdb/errors"

	"github.com/oduflow/oduflow-go/internal/errmark"
	"github.com/oduflow/oduflow-go/oduflow/claims"
	"github.com/oduflow/oduflow-go/oduflow/filestore"
)

// The claim store contract is package claims' (oduflow/claims: its documentation is the contract, clause
// by clause, and its package doc lists the optional capabilities and what the Dispatcher does without
// each); the file store is package filestore's. These names are the same types, so a store written
// against package oduflow keeps compiling.

// ClaimStore is the durable, shared record of claims (claims.ClaimStore).
type ClaimStore = claims.ClaimStore

// Lease is a held lock; Release is idempotent (claims.Lease).
type Lease = claims.Lease

// Leases are the liveness locks of the dispatcher (claims.Leases).
type Leases = claims.Leases

// Store is what a Dispatcher runs on (WithClaimStore): the claims and the liveness locks of one backend in
// one value, so the compiler checks both (claims.Store). FileClaimStore (the default) and etcdstore.Store
// implement it. The Dispatcher uses each optional capability it finds at New: ClaimLockReader,
// WindowedStore, UnresolvedLister, UnresolvedScanner.
type Store = claims.Store

// ClaimLockReader is the optional capability of a Store that reads a claim and its request lock at one
// instant (claims.ClaimLockReader).
type ClaimLockReader = claims.ClaimLockReader

// WindowedStore is the optional capability of a Store that measures the status rules' two windows itself
// (claims.WindowedStore).
type WindowedStore = claims.WindowedStore

// Liveness is what a WindowedStore reads about one claim at one instant (claims.Liveness).
type Liveness = claims.Liveness

// UnresolvedLister is the optional index of a ClaimStore that keeps each client's unresolved claims apart
// from its history (claims.UnresolvedLister).
type UnresolvedLister = claims.UnresolvedLister

// UnresolvedScanner is the optional index of a ClaimStore that lists the unresolved claims of every client
// (claims.UnresolvedScanner).
type UnresolvedScanner = claims.UnresolvedScanner

// FileClaimStore is the file-backed store, the default (filestore.Store): one claim file per request in a
// private directory shared by the processes of one host, kernel locks for the leases.
type FileClaimStore = filestore.Store

// defaultClaimDir is where claims live unless WithClaimDir says otherwise.
const defaultClaimDir = "/var/cache/salt/oduflow-apply"

// OpenFileClaimStore opens (creating it 0700 when missing) the claim directory (filestore.Open).
func OpenFileClaimStore(dir string) (_ *FileClaimStore, err error) {
	defer errmark.Boundary(&err)
	return filestore.Open(dir)
}

// outcomeUnknownError is how a ClaimStore marks a write whose acknowledgement was lost (it may have
// committed): some error in the chain has OutcomeUnknown() reporting true (etcdstore's writes do). The
// behaviour is matched rather than a sentinel so that this package needs no store's import.
type outcomeUnknownError interface{ OutcomeUnknown() bool }

func isOutcomeUnknown(err error) bool {
	var ou outcomeUnknownError
	return errors.As(err, &ou) && ou.OutcomeUnknown()
}

// unreadableClaim is how a ClaimStore names a claim its listing could not read (claims.ClaimStore): the
// file store's errors have the method. Matched by behaviour, as outcomeUnknownError.
type unreadableClaim interface{ UnreadableRequestID() string }
