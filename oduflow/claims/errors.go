package claims

import "github.com/cockroachdb/errors"

// The errors of the store contract: what a ClaimStore or Leases implementation returns, and what the
// dispatcher tests with errors.Is; the dispatcher returns them to its callers too. The messages keep
// the "oduflow:" prefix they had before the contract was a package of its own: every error text is as
// it was.
var (
	// ErrInvalidInput: a minion id, request id, profile or evidence argument is malformed. It wraps the
	// receipt package's id errors (receipt.ErrInvalidID, ...).
	ErrInvalidInput = errors.New("oduflow: invalid input")
	// ErrNoClaim: there is no claim for the request (ClaimStore.Get; the dispatcher's Reconcile, Resume).
	ErrNoClaim = errors.New("oduflow: no claim for request")
	// ErrClaimExists: ClaimStore.Create found a claim for the request already.
	ErrClaimExists = errors.New("oduflow: claim already exists")
	// ErrConflict: a fenced update lost its compare-and-swap (the generation changed meanwhile).
	ErrConflict = errors.New("oduflow: claim generation conflict")
	// ErrLeaseLost: a guarded update found that the caller no longer holds a lease it named (released,
	// expired, or not from this store's Leases); nothing was written.
	ErrLeaseLost = errors.New("oduflow: lease no longer held")
	// ErrLeaseBusy: a lease is held by someone else: Leases.TryRequestLock found the request lock held, or
	// Leases.AcquireClientLease could not have the per-client execution lease within its wait.
	ErrLeaseBusy = errors.New("oduflow: lease held by someone else")
	// ErrCorruptClaim: a stored claim fails validation.
	ErrCorruptClaim = errors.New("oduflow: corrupt claim")
	// ErrClaimStore: the claim store could not be read or written.
	ErrClaimStore = errors.New("oduflow: claim store unavailable")
)
