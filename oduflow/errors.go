package oduflow

import (
	"github.com/cockroachdb/errors"

	"github.com/oduflow/oduflow-go/internal/errmark"
	"github.com/oduflow/oduflow-go/oduflow/claims"
)

// Sentinel errors of the dispatcher. Test them with errors.Is. The errors of the claim store contract
// (claims.ErrInvalidInput, ErrNoClaim, ErrClaimExists, ErrConflict, ErrLeaseLost, ErrLeaseBusy,
// ErrCorruptClaim, ErrClaimStore) are package claims' alone; the dispatcher returns them too.
var (
	// ErrMismatch: the request id is bound to another minion, another profile or (CustomStart) another
	// definition; the message names the binding. A caller-supplied receipt that differs from the minion's
	// live reply (Reconcile FromMinion) is ErrMismatch too.
	ErrMismatch = errors.New("oduflow: request bound elsewhere")
	// ErrNotUnknown: Reconcile or Resume of a request whose status is not unknown.
	ErrNotUnknown = errors.New("oduflow: request is not unknown")
	// ErrUnresolved: the minion's live reply is not a terminal receipt bound to the claim, or (a legacy
	// claim) no minion receipt can exist for the request: only an operator's Assert resolves it.
	ErrUnresolved = errors.New("oduflow: minion has no terminal receipt for the request")
	// ErrNotFenced: Reconcile with Assert of a request that may still be published (its dispatch intent
	// is recorded and there is no terminal receipt) whose fence the minion did not confirm: its signed
	// answer after oduflow_job.fence was missing or did not say the publication can no longer start.
	// Nothing was recorded.
	// Reconcile FromMinion, or Assert again once the minion answers.
	ErrNotFenced = errors.New("oduflow: the request may still be published; the minion did not confirm its fence")
	// ErrClosed: the Dispatcher is draining or closed (Close): it admits no new request (Start,
	// CustomStart, Resume); nothing was written. Send the request to another replica.
	ErrClosed = errors.New("oduflow: dispatcher closed")
)

// Internal refusals; each is reported through one of the sentinels above (or recorded as an error code).
var (
	// errProfileMismatch, errMinionMismatch: what a mismatchError unwraps to (both ErrMismatch).
	errProfileMismatch = errmark.Mark(errors.New("oduflow: request bound to another profile"), ErrMismatch)
	errMinionMismatch  = errmark.Mark(errors.New("oduflow: request bound to another minion"), ErrMismatch)
	// errLegacyClaim: the operation needs a protocol-1 claim (no minion receipt exists for legacy claims).
	errLegacyClaim = errmark.Mark(errors.New("oduflow: legacy claim has no minion receipt"), ErrUnresolved)
	// errEvidenceMismatch: a caller-supplied receipt differs from the minion's live reply.
	errEvidenceMismatch = errmark.Mark(errors.New("oduflow: evidence does not match the minion's receipt"), ErrMismatch)
	// errRoleNotAllowed: the persisted profile/role pair is not in profiles.Fixed() (recorded as
	// role_not_allowed).
	errRoleNotAllowed = errors.New("oduflow: persisted profile/role pair not allowed")
	// errClosed: the dispatcher was closed (the event subscription says so too).
	errClosed = ErrClosed
	// errNoReturn: a read-only call (ping, capabilities, status) got no return in time.
	errNoReturn = errors.New("oduflow: no return from minion")
	// errClaimReplaced: the stored claim of a request id is not the one a worker, Resume or Reconcile
	// read (another JID): it was re-created, so nothing of the earlier run is committed onto it.
	errClaimReplaced = errmark.Mark(errors.New("oduflow: claim re-created under another JID"), claims.ErrCorruptClaim)
)

// mismatchError reports which binding a request id is already bound to, without leaking more
// (ErrMismatch).
type mismatchError struct {
	Field string // "profile" or "minion_id"
	Bound string // the value the claim holds (an identity or profile name, not a secret)
}

func (e *mismatchError) Error() string {
	return "oduflow: request id already bound to " + e.Field + " " + e.Bound
}

// SafeFormatError keeps the message visible in redacted reports (identities are not secrets).
func (e *mismatchError) Unwrap() error {
	if e.Field == "profile" {
		return errProfileMismatch
	}
	return errMinionMismatch
}

func invalid(err error, what string) error {
	return errmark.Mark(errors.Wrapf(err, "oduflow: invalid %s", errors.Safe(what)), claims.ErrInvalidInput)
}

// Readiness sentinels. A Start (or CustomStart) of a request that has no claim yet first checks that the
// dispatcher can dispatch at all; when it cannot, it writes nothing and returns an error matching
// ErrNotReady and its cause: the event bus or the master unreachable, salt.ErrKeyFile, salt.ErrAuthentication
// or salt.ErrAuthorization (stdlib errors.Is sees them). The same request id can be started once the
// configuration is fixed.
var (
	// ErrNotReady: the dispatcher cannot dispatch now; nothing was written (no claim, no snapshot).
	ErrNotReady = errors.New("oduflow: not ready to dispatch; nothing written")
)

// Custom execution refusals. Test them with errors.Is; the typed errors below carry the request id that
// needs attention.
var (
	// ErrNeedsConfirmation: the latest execution of the definition on the server failed and the failure
	// is not confirmed yet. A dispatched attempt is confirmed by its minion receipt (read it through
	// oduflow_job.status: CustomStart does that itself once, or Reconcile FromMinion); a preflight failure
	// by the master's own terminal record. An operator's assertion does not confirm a failure.
	ErrNeedsConfirmation = errors.New("oduflow: the previous failure must be confirmed first")
	// ErrApplyAgainWithoutTerminal: Apply Again was requested but the definition has no known terminal
	// result on the server.
	ErrApplyAgainWithoutTerminal = errors.New("oduflow: apply again needs a known terminal result")
	// ErrInitialConfigurationMissing: the server has no successful initial configuration (a configure
	// receipt confirmed by the minion, or a legacy configuration claim terminal succeeded; an asserted
	// outcome does not count).
	ErrInitialConfigurationMissing = errors.New("oduflow: initial configuration has not succeeded on the server")
	// ErrUncertain: a custom execution on the server has an unknown outcome; it blocks new custom
	// executions there until it is reconciled.
	ErrUncertain = errors.New("oduflow: an uncertain custom execution blocks the server")
)

// ErrNotAssigned: the definition is not assigned to the server.
var ErrNotAssigned = errors.New("oduflow: definition not assigned to the server")

// ErrWorkerLaunch: a detached worker process could not be started. Start returns it (naming the
// request) together with the response: the claim was committed terminal failed with
// worker_launch_failed, nothing was published. Resume returns it when its worker could not be started or
// ended at once with an error (the request stays unknown).
var ErrWorkerLaunch = errors.New("oduflow: worker launch failed")
