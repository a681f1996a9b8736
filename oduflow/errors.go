package oduflow

import (
	"github.com/cockroachdb/errors"
	"github.com/oduflow/oduflow-go/internal/errmark"
)

// Sentinel errors. Test them with errors.Is.
var (
	// ErrInvalidInput: a minion id, request id, profile or evidence argument is malformed. It wraps the
	// receipt package's id errors (receipt.ErrInvalidID, ...).
	ErrInvalidInput = errors.New("oduflow: invalid input")
	// ErrProfileMismatch: the request id is bound to another profile.
	ErrProfileMismatch = errors.New("oduflow: request bound to another profile")
	// ErrMinionMismatch: the request id is bound to another minion.
	ErrMinionMismatch = errors.New("oduflow: request bound to another minion")
	// ErrQuarantined: the client has an unresolved dispatched request. No call returns it today: a request
	// refused for quarantine is a failed claim with CodeQuarantined, and Dispatcher.Quarantine lists the
	// blocking requests. It is kept for ClaimStore implementations and callers that report the condition.
	ErrQuarantined = errors.New("oduflow: client quarantined by an unresolved dispatched request")
	// ErrNoClaim: there is no claim for the request (Reconcile, Resume).
	ErrNoClaim = errors.New("oduflow: no claim for request")
	// ErrClaimExists: ClaimStore.Create found a claim for the request already.
	ErrClaimExists = errors.New("oduflow: claim already exists")
	// ErrConflict: a fenced update lost its compare-and-swap (the generation changed meanwhile).
	ErrConflict = errors.New("oduflow: claim generation conflict")
	// ErrLeaseHeld: a request lock is held by someone else.
	ErrLeaseHeld = errors.New("oduflow: lease held")
	// ErrLeaseLost: a guarded update found that the caller no longer holds a lease it named (released,
	// expired, or not from this store's Leases); nothing was written.
	ErrLeaseLost = errors.New("oduflow: lease no longer held")
	// ErrLeaseBusy: the per-client execution lease could not be had within the wait.
	ErrLeaseBusy = errors.New("oduflow: client execution lease busy")
	// ErrNotUnknown: Reconcile or Resume of a request whose status is not unknown.
	ErrNotUnknown = errors.New("oduflow: request is not unknown")
	// ErrLegacyClaim: the operation needs a protocol-1 claim (no minion receipt exists for legacy claims).
	ErrLegacyClaim = errors.New("oduflow: legacy claim has no minion receipt")
	// ErrEvidenceMismatch: a caller-supplied receipt differs from the minion's live reply.
	ErrEvidenceMismatch = errors.New("oduflow: evidence does not match the minion's receipt")
	// ErrUnresolved: the minion's live reply is not a terminal receipt bound to the claim.
	ErrUnresolved = errors.New("oduflow: minion has no terminal receipt for the request")
	// ErrCorruptClaim: a stored claim fails validation.
	ErrCorruptClaim = errors.New("oduflow: corrupt claim")
	// ErrRoleNotAllowed: the persisted profile/role pair is not in profiles.Fixed().
	ErrRoleNotAllowed = errors.New("oduflow: persisted profile/role pair not allowed")
	// ErrClosed: the dispatcher was closed.
	ErrClosed = errors.New("oduflow: dispatcher closed")
	// ErrNoReturn: a read-only call (ping, capabilities, status) got no return in time.
	ErrNoReturn = errors.New("oduflow: no return from minion")
)

// MismatchError reports which binding a request id is already bound to, without leaking more.
type MismatchError struct {
	Field string // "profile" or "minion_id"
	Bound string // the value the claim holds (an identity or profile name, not a secret)
}

func (e *MismatchError) Error() string {
	return "oduflow: request id already bound to " + e.Field + " " + e.Bound
}

// SafeFormatError keeps the message visible in redacted reports (identities are not secrets).
func (e *MismatchError) Unwrap() error {
	if e.Field == "profile" {
		return ErrProfileMismatch
	}
	return ErrMinionMismatch
}

// UnreadableClaimError: FileClaimStore.ListByClient found a claim of the client it cannot read (unsafe file,
// FIFO, corrupt or duplicate-key JSON, ...). It is ErrCorruptClaim for errors.Is and keeps the cause
// reachable; RequestID names the claim (an identifier, not a secret). A client whose claims cannot all be
// read cannot be proven clear, so the dispatcher refuses to dispatch to it (CodeClaimStore) and logs the
// request id; it never reads the unreadable claim as "quarantined".
type UnreadableClaimError struct {
	RequestID string
	Err       error
}

func (e *UnreadableClaimError) Error() string {
	return "oduflow: unreadable claim " + e.RequestID + ": " + e.Err.Error()
}

// Unwrap makes errors.Is(err, ErrCorruptClaim) true and keeps the cause (e.g. safefile.ErrNotRegular) visible.
func (e *UnreadableClaimError) Unwrap() []error { return []error{e.Err, ErrCorruptClaim} }

// SafeFormatError prints the request id (an identifier) and the cause's own redaction-safe form.
func (e *UnreadableClaimError) SafeFormatError(p errors.Printer) (next error) {
	p.Printf("oduflow: unreadable claim %s", errors.Safe(e.RequestID))
	return e.Err
}

func invalid(err error, what string) error {
	return errmark.Mark(errors.Wrapf(err, "oduflow: invalid %s", errors.Safe(what)), ErrInvalidInput)
}

// Error codes recorded (sanitized) in claims.
const (
	CodeLeaseBusy           = "lease_busy"
	CodeQuarantined         = "quarantined"
	CodeClaimStore          = "claim_store_unreadable" // the client's claims or leases cannot be read safely
	CodeCapability          = "capability_unverified"
	CodeMinionKey           = "minion_key_unavailable"
	CodeEventBus            = "event_bus_unavailable"
	CodeRoleNotAllowed      = "role_not_allowed"
	CodePayload             = "payload_unavailable"
	CodeAuthentication      = "publish_authentication"
	CodeAuthorization       = "publish_authorization"
	CodeNoMinions           = "publish_no_minions"
	CodeBadLoad             = "publish_bad_load"
	CodeMasterException     = "publish_master_exception"
	CodeNotSent             = "publish_not_sent"
	CodeRefused             = "publish_refused"
	CodeOutcomeUnknown      = "publish_outcome_unknown"
	CodeNoTrustworthyReturn = "no_trustworthy_return"
	CodeMinionUnknown       = "minion_reported_unknown"
	CodeWorkerLost          = "worker_lost"
	CodeWorkerLaunch        = "worker_launch_failed"
	CodeJIDCollision        = "jid_collision"
	CodeAsserted            = "asserted"
)
