package oduflow

import (
	"github.com/cockroachdb/errors"

	"github.com/oduflow/oduflow-go/internal/errmark"
	"github.com/oduflow/oduflow-go/oduflow/claims"
)

// Sentinel errors. Test them with errors.Is. Those of the claim store contract (ErrInvalidInput,
// ErrNoClaim, ErrClaimExists, ErrConflict, ErrLeaseLost, ErrLeaseBusy, ErrCorruptClaim, and ErrClaimStore
// below) are package claims' values under the same names: errors.Is sees one value either way.
var (
	// ErrInvalidInput: a minion id, request id, profile or evidence argument is malformed. It wraps the
	// receipt package's id errors (receipt.ErrInvalidID, ...).
	ErrInvalidInput = claims.ErrInvalidInput
	// ErrMismatch: the request id is bound to another minion, another profile or (CustomStart) another
	// definition; the message names the binding. A caller-supplied receipt that differs from the minion's
	// live reply (Reconcile FromMinion) is ErrMismatch too.
	ErrMismatch = errors.New("oduflow: request bound elsewhere")
	// ErrNoClaim: there is no claim for the request (Reconcile, Resume).
	ErrNoClaim = claims.ErrNoClaim
	// ErrClaimExists: ClaimStore.Create found a claim for the request already.
	ErrClaimExists = claims.ErrClaimExists
	// ErrConflict: a fenced update lost its compare-and-swap (the generation changed meanwhile).
	ErrConflict = claims.ErrConflict
	// ErrLeaseLost: a guarded update found that the caller no longer holds a lease it named (released,
	// expired, or not from this store's Leases); nothing was written.
	ErrLeaseLost = claims.ErrLeaseLost
	// ErrLeaseBusy: a lease is held by someone else: Leases.TryRequestLock found the request lock held, or
	// Leases.AcquireClientLease could not have the per-client execution lease within its wait.
	ErrLeaseBusy = claims.ErrLeaseBusy
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
	// ErrCorruptClaim: a stored claim fails validation.
	ErrCorruptClaim = claims.ErrCorruptClaim
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
	errClaimReplaced = errmark.Mark(errors.New("oduflow: claim re-created under another JID"), ErrCorruptClaim)
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
	return errmark.Mark(errors.Wrapf(err, "oduflow: invalid %s", errors.Safe(what)), ErrInvalidInput)
}

// ErrorCode is the sanitized reason a claim records for its result: Claim.ErrorCode, Response.ErrorCode and
// CustomResponse.ErrorCode ("error_code" in JSON, a plain string there). It is "" when there is none (a
// succeeded request, a running one, not_started) or one of the Code* constants below (the repository
// README's "Error codes" table). The code says why; the status says whether the run may have happened:
// failed is a known result (a new request id may follow), unknown is not (never start a replacement;
// Reconcile). Claims are not validated against this list: one written by another version may carry a
// code this one does not name, so read an unknown code as text, never as an error.
//
// It is claims.ErrorCode, the type of Claim.ErrorCode.
type ErrorCode = claims.ErrorCode

// Error codes recorded (sanitized) in claims. Each says what it means, whether the run may have
// happened, and what to do. A retry is always a new request id: nothing retries on its own.
const (
	// CodeLeaseBusy: failed; nothing published. The client's execution lease stayed busy for
	// Timers.LeaseWait (another request of the client runs, or is being polled). Start a new request id
	// once the other one is final.
	CodeLeaseBusy ErrorCode = "lease_busy"
	// CodeQuarantined: failed; nothing published. The client has an unresolved dispatched request (its
	// status is unknown) that blocks every new dispatch. Reconcile that request (Dispatcher.Quarantine and
	// Unresolved name it), then start a new request id.
	CodeQuarantined ErrorCode = "quarantined"
	// CodeClaimStore: failed; nothing published. The client's claims or leases cannot be read or used
	// safely (the log names the unreadable claim), or the store issued no fencing token. Repair the
	// store, then start a new request id.
	CodeClaimStore ErrorCode = "claim_store_unreadable"
	// CodeCapability: failed; nothing published. oduflow_job.capabilities did not report protocol 1 with
	// receipt proofs and fencing (the minion module is missing or too old, or the minion did not answer).
	// Install the module on the minion, then start a new request id.
	CodeCapability ErrorCode = "capability_unverified"
	// CodeMinionKey: failed; nothing published. The master's accepted key for the minion cannot be read
	// safely, and without it no receipt proof can be verified. Check the master's pki directory, then start
	// a new request id.
	CodeMinionKey ErrorCode = "minion_key_unavailable"
	// CodeEventBus: failed; nothing published. The master's event bus cannot be subscribed to, or
	// delivers nothing (stalled). Fix the event bus access, then start a new request id.
	CodeEventBus ErrorCode = "event_bus_unavailable"
	// CodeRoleNotAllowed: failed; nothing published. The claim's persisted profile/role pair is not in
	// profiles.Fixed() of the binary that ran its worker (another version, or a tampered claim).
	CodeRoleNotAllowed ErrorCode = "role_not_allowed"
	// CodePayload: failed; nothing published. A custom claim's frozen payload (its catalog snapshot)
	// cannot be read. Check the catalog, then start a new request id.
	CodePayload ErrorCode = "payload_unavailable"
	// CodeAuthentication: failed; nothing published. The master refused the credentials (the publish or a
	// preflight call). Fix them, then start a new request id (oduflowctl exits 4).
	CodeAuthentication ErrorCode = "publish_authentication"
	// CodeAuthorization: failed; nothing published. The master refused the call for the credentials'
	// permissions (publisher ACL, eauth). Fix them, then start a new request id (oduflowctl exits 4).
	CodeAuthorization ErrorCode = "publish_authorization"
	// CodeNoMinions: failed; nothing published. The master matched no minion for the id (its key is not
	// accepted, or it is not connected), at the preflight capabilities call or at the publish. Start a new
	// request id once the minion is there.
	CodeNoMinions ErrorCode = "publish_no_minions"
	// CodeBadLoad: failed; nothing published. The master refused the publish as a bad load.
	CodeBadLoad ErrorCode = "publish_bad_load"
	// CodeMasterException: failed; nothing published. The master answered the publish with an exception.
	CodeMasterException ErrorCode = "publish_master_exception"
	// CodeNotSent: failed; nothing published. The request never left (a call or the publish not sent:
	// the master unreachable). Start a new request id once it is reachable.
	CodeNotSent ErrorCode = "publish_not_sent"
	// CodeRefused: failed; nothing published. Another master reply that proves nothing was published.
	CodeRefused ErrorCode = "publish_refused"
	// CodeOutcomeUnknown: unknown; the run MAY have happened (lost reply, timeout after send). The client
	// is quarantined; the worker keeps listening, and a verified receipt replaces unknown. Never start a
	// replacement: Resume, or Reconcile FromMinion.
	CodeOutcomeUnknown ErrorCode = "publish_outcome_unknown"
	// CodeNoTrustworthyReturn: unknown; the run MAY have happened. No verified receipt arrived within the
	// window or the poll budget. Never start a replacement: Resume, or Reconcile FromMinion.
	CodeNoTrustworthyReturn ErrorCode = "no_trustworthy_return"
	// CodeMinionUnknown: unknown; the run MAY have happened, partly: the minion's signed receipt says
	// unknown (its run was claimed or started and the minion's worker died). Inspect the server, then
	// Reconcile with Assert; never start a replacement blindly.
	CodeMinionUnknown ErrorCode = "minion_reported_unknown"
	// CodeWorkerLost: unknown; nothing published: the worker of a request never dispatched took its lock
	// after the launch window (or was gone and an adopter found it), when Status may already have read it
	// unknown, so it is never dispatched later (no dispatch intent: it does not quarantine the client).
	// Start a new request id.
	CodeWorkerLost ErrorCode = "worker_lost"
	// CodeWorkerLaunch: failed; nothing published. A detached worker process could not be started (Start
	// returned an error matching ErrWorkerLaunch). Fix the executable or the host, then start a new
	// request id.
	CodeWorkerLaunch ErrorCode = "worker_launch_failed"
	// CodeJIDCollision: failed; nothing published. Another claim of the client drew the same JID. Start a
	// new request id.
	CodeJIDCollision ErrorCode = "jid_collision"
	// CodeAsserted: an operator asserted the outcome (Reconcile with Assert; phase asserted, who and why
	// in the claim). The status is the operator's word, never a minion receipt.
	CodeAsserted ErrorCode = "asserted"
	// CodeFenced: failed 0/0; it never ran. The minion refused the run because its fencing token was not
	// above the minion's mark (a verified fenced receipt). A restored or shared claim store issues such
	// tokens: check it, then start a new request id.
	CodeFenced ErrorCode = "fenced"
	// CodeFenceBehind: failed; nothing published. The claim store issued a fencing token not above the
	// minion's high-water mark, which the minion would refuse. Check the store, then start a new request id.
	CodeFenceBehind ErrorCode = "fence_behind"
	// CodeNeverRan: failed 0/1, evidence fenced; it never ran and never will. A reconciliation fenced the
	// publication before it started (the minion's signed answer). A new request id may follow.
	CodeNeverRan ErrorCode = "never_ran"
	// CodeDispatcherClosed: failed; nothing published. Close cancelled the worker before its dispatch
	// intent. Start a new request id (on another replica).
	CodeDispatcherClosed ErrorCode = "dispatcher_closed"
	// CodeRuntimeGuard: failed 0/1; it never ran. The minion module's runtime guard fails: it refused
	// the run as unprotected (evidence fenced: the worker fenced the publication and the minion confirmed),
	// or the capabilities answer showed it would (evidence preflight: nothing published). Ping's
	// RuntimeGuardError says which of Salt's internals it did not recognise. Fix the minion, then start a
	// new request id.
	CodeRuntimeGuard ErrorCode = "runtime_guard_failed"
	// CodeMinionRefused: failed 0/1, evidence fenced; it never ran. The minion module refused the run
	// before any state work. Read the minion's log, then start a new request id.
	CodeMinionRefused ErrorCode = "minion_refused"
	// CodeLegacyError: a legacy (pre-protocol) claim recorded an error text; its status is the legacy
	// record's. The text is not kept: the code only says there was one (the claim decoder records it:
	// claims.CodeLegacyError, the same value).
	CodeLegacyError ErrorCode = "legacy_error"
	// CodeFenceExhausted: failed 0/1; nothing published. The minion's fence high-water mark is at
	// MaxFenceToken: no token above it can be issued, so the fence counter cannot advance and every run
	// would be refused (Ping: not ready, FencingError says so). No quarantine. Reset the minion's fence
	// record deliberately (a minion re-installed with a new receipt directory), then start a new request id.
	CodeFenceExhausted ErrorCode = "fence_exhausted"
	// CodeProfileTableMismatch: failed 0/1, evidence preflight; nothing was published. The minion's
	// profile table (its oduflow_profiles config; the seeds' table without it) has another digest than
	// the dispatcher's (WithProfiles): install the same table on both sides, then start a new request id.
	CodeProfileTableMismatch ErrorCode = "profile_table_mismatch"
)

// Readiness sentinels. A Start (or CustomStart) of a request that has no claim yet first checks that the
// dispatcher can dispatch at all; when it cannot, it writes nothing and returns an error matching
// ErrNotReady and its cause: the event bus or the master unreachable, salt.ErrKeyFile, salt.ErrAuthentication
// or salt.ErrAuthorization (stdlib errors.Is sees them). The same request id can be started once the
// configuration is fixed.
var (
	// ErrNotReady: the dispatcher cannot dispatch now; nothing was written (no claim, no snapshot).
	ErrNotReady = errors.New("oduflow: not ready to dispatch; nothing written")
	// ErrClaimStore: the claim store could not be read or written.
	ErrClaimStore = claims.ErrClaimStore
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
