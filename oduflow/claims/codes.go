package claims

// ErrorCode's values: the sanitized reasons a claim records for its result (Claim.ErrorCode; oduflow's
// Response.ErrorCode and CustomResponse.ErrorCode; the repository README's "Error codes" table), besides
// CodeLegacyError (claim.go). Each says what it means, whether the run may have happened, and what to
// do. A retry is always a new request id: nothing retries on its own. Timers, Dispatcher, Reconcile,
// Resume and WithProfiles below are package oduflow's.

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
