// Package oduflow is the controller API of oduflow-go: an at-most-once dispatcher of fixed Salt roles (and,
// through custom executions, digest-bound custom states) to client minions, with durable claims, a
// per-client execution lease, quarantine and explicit reconciliation.
//
// # API
//
// The basic flow imports only oduflow and salt (the client):
//
//	d, err := oduflow.New(client, oduflow.SaltEvents(eventAddr), oduflow.WithClaimDir(dir))
//	ready, err := d.Ping(ctx, minion)                      // test.ping + oduflow_job.capabilities
//	request := receipt.NewRequestID()
//	resp, err := d.Start(ctx, minion, request, receipt.ProfileConfigure)
//	resp, err = d.Status(ctx, minion, request, receipt.ProfileConfigure)
//	resp, err = d.Reconcile(ctx, minion, request, oduflow.FromMinion{})   // or oduflow.Assert{...}
//	resp, err = d.Resume(ctx, minion, request)              // poll an unknown request again
//	claim, err := d.Lookup(ctx, minion, request)            // operator read, no profile needed
//
// Every call names its target the same way: ctx, minion, request, then what the call needs (a profile,
// a definition and mode for CustomStart, a Reconciliation). Every Start/Status answers with Response
// (JSON: minion_id, request_id, jid, status, passed, total; jid is null for not_started). Status is
// not_started, running, succeeded, failed or unknown (receipt.Status: the receipt.Status* constants). A request id is bound to one
// profile and one minion: using it through another is refused with ErrMismatch (the message names the
// binding). Malformed ids are ErrInvalidInput (wrapping the receipt package's id errors) and are refused
// before any I/O.
//
// # Claims
//
// Start writes a claim (phase claimed, JID preassigned, profile and its fixed role) durably with
// create-if-absent semantics before the worker starts; a repeated Start returns the current status and never
// publishes again. Claims live behind ClaimStore (create-if-absent, fenced compare-and-swap update, get,
// list by client) and Leases; FileClaimStore is the default: one file per request in a 0700 directory
// (default /var/cache/salt/oduflow-apply), files 0600, written through the internal safe file store (exclusive temp file,
// fsync, rename, directory fsync; symlinks, foreign owners, group/other bits and hard links refused).
// What a new Start waits for on FileClaimStore is two fsync waits in a row, the least a durable exclusive
// create allows (the claim's content must be durable before its name appears, and its name before the worker
// starts): first the claim's temporary file, concurrently with the client's index entry
// (clients/<minion>/<request>, an empty file created directly: nothing to tear, so no temporary file or data
// fsync) and, for a client new to the store, its index directory; then the rename into place and the claim
// directory's fsync, which concurrent Starts share (group commit). The index entry is durable before the
// claim's name can exist, so a crash anywhere leaves no claim (a retried Start creates it) or a claim its
// client's index lists (the quarantine check, which reads only the client's index, cannot miss it);
// FileClaimStore.Create lists the crash points. The checks before a claim is written are the claim store,
// the credentials, the event-bus subscription (connected now) and one proof that the master answers its
// request channel (an unauthenticated clear-channel ping, shared by every Start for a few seconds: about
// 0.4 ms against the simulated master, 70 ns when cached); when one fails, Start returns ErrNotReady and
// nothing is written.
//
// Legacy claims keep their meaning: claims without profile fields are configuration jobs; claims without a
// protocol field were published as plain state.apply and can never get a minion receipt. A legacy claim
// dispatched without a terminal result is unknown and quarantines its client until an operator asserts an
// outcome.
//
// # Worker
//
//  1. request lock (what Status reads as "holds the execution lease"), then the per-client execution
//     lease shared by all profiles (wait <= 60 s). Busy, or quarantined by an unresolved dispatched request
//     of any profile: terminal failed 0/1 (a preflight receipt), nothing published.
//  2. oduflow_job.capabilities must report protocol 1, else a preflight failure.
//  3. the dispatch intent (phase dispatching, dispatch time) is recorded durably, fenced on the claim's
//     revision and on both leases (ClaimStore.CompareAndSwapHeld). If that write's acknowledgement is lost
//     (a store error with an OutcomeUnknown() method, e.g. etcd's leader dying mid-transaction), the worker
//     settles it while it still holds both leases: it re-reads the claim, retries the same fenced write if
//     it did not land, and goes on only once one more guarded write proves a landed intent its own;
//     undecidable within half the launch grace, nothing is published and the request reads unknown (so a
//     request is published if and only if its claim reached the intent, save that residual case). The
//     dispatcher's ONE
//     shared event-bus subscription registers the JID; oduflow_job.run(request_id, profile,
//     state_data_json) is published once with the preassigned JID to the minion alone (list target). It
//     is never retried. An outcome-unknown publish (lost reply, timeout after send) is committed unknown at
//     once and quarantines; the worker then releases the client lease and goes on listening and polling
//     as in step 4, and a trustworthy receipt bound to the claim replaces unknown (releasing the
//     quarantine; a minion answering not_started never does). A reply proving nothing was published
//     (authentication, authorization, no minion, bad load, master exception) is failed with an error code
//     and does not quarantine.
//  4. it waits (<= 7200 s) for the return on the event bus and polls oduflow_job.status on the expected
//     minion on a schedule spreading 250 polls over the window, and at once after an event-bus gap (at
//     most one such poll per poll interval, outside the budget).
//     Both are hints: a final-looking one (a protocol-1 receipt bound to the claim) makes the worker ask
//     for the receipt proof, and only a verified proof commits a final result (see Receipt proofs).
//     Window or budget spent: unknown. A return of the expected minion that is the module's refusal (an
//     error answer, retcode not 0, "oduflow_job: ..."; e.g. "refusing to run unprotected" when its
//     runtime guard fails) makes the worker fence the publication (oduflow_job.fence) and ask for the
//     signed answer: a verified fenced receipt proves the run never started and never will, and the request
//     is final at once, failed 0/1 with runtime_guard_failed or minion_refused (evidence fenced). After each
//     publish the master acknowledged, nothing at all arriving on the bus within Timers.BusStall is a
//     "bus stalled" gap (salt.ErrBusStalled; Hooks.BusGap("bus_stalled")): the waiters poll, and new Starts
//     are refused (ErrNotReady) until an event arrives or 30 s pass.
//  5. the final result is committed under the claim's fenced update; a final result committed meanwhile
//     by someone else is kept. Network I/O never happens under the claim record lock.
//
// Workers run in-process by default. WithDetachedWorkers(exe) starts each worker as a separate
// process of the same binary whose command line is exactly the two identities; the binary calls
// RunWorkerIfRequested first thing in main (its build func must include WithCustomCatalog when custom
// executions are used). The worker re-validates the persisted profile/role pair against profiles.Fixed()
// before publishing, and decides from the persisted claim what to do: dispatch a claim in phase claimed,
// or poll an unresolved dispatched claim whose window is open (a detached Resume). A detached worker's
// stdin/stdout/stderr are /dev/null unless WithWorkerLog(path) names a private log file: it never inherits
// the launcher's. A worker that cannot be started leaves nothing published: Start commits the claim
// terminal failed (worker_launch_failed) and returns the response with an error matching ErrWorkerLaunch.
//
// # Status rules and timers
//
// No claim: not_started. Final claim: its recorded status. Otherwise: unknown more than
// Timers.StatusExpiry (7260 s) after dispatch, even if the lock is held; running while the request lock is
// held; running within Timers.LaunchGrace (30 s) of creation; unknown afterwards (the worker disappeared).
// The worker's alarm is Timers.HardDeadline (7250 s) after dispatch. Timers is the one place the timers
// are expressed: DefaultTimers returns the production values, WithTimers replaces them.
//
// # Quarantine and reconciliation
//
// An unknown request that was dispatched (the intent was recorded, so the publish may have gone out) blocks
// every new dispatch to its client, across profiles, until Reconcile: FromMinion fetches the minion's exact
// receipt through oduflow_job.status (a caller-supplied receipt counts only if it equals the live reply);
// Assert records an operator's outcome as the terminal phase asserted (who, why), never counted as a minion
// receipt. FromMinion also replaces an assertion by the minion's exact terminal receipt (evidence
// reconciled; who and why are kept for audit). Resume polls an unknown request again (at once, then on the
// schedule, for another window; in a detached worker when workers are detached); a trustworthy terminal
// receipt replaces unknown. Nothing ever creates a new request automatically: a retry is a new request id.
//
// # Receipt proofs and threat model
//
// The master event bus does not say who put an event on it. Any authenticated minion can fire an event
// with any tag through _minion_event (its batched "events" form fires the data exactly as sent), and every
// minion receives every publication, so request ids, JIDs and nonces are known to all of them. A
// salt/job/<jid>/ret/<minion> event, or the answer of a status poll, is therefore never evidence.
//
// At preflight the minion must advertise receipt proofs in oduflow_job.capabilities ("proof": {"alg":
// "rsa-pkcs1v15-sha256", "ready": true}; there is no fallback to unproven receipts), and the key the
// master accepted for that minion id is read from <pki_dir>/minions/<id> (WithPKIDir, default
// /etc/salt/pki/master; opened without following symlinks or blocking, a small regular file, PEM
// SubjectPublicKeyInfo or PKCS#1, RSA >= 2048 bits; never through a wheel call). Its fingerprint (hex
// SHA-256 of the DER SubjectPublicKeyInfo) is pinned in the claim (minion_key_sha256) with the dispatch
// intent. A final-looking return or poll makes the worker call oduflow_job.attest(request_id, jid, profile,
// nonce) on the expected minion with a fresh 32-byte nonce; the answer counts only if its RSA PKCS#1 v1.5
// SHA-256 signature over "oduflow-receipt-proof-v1\n" + nonce + "\n" + the receipt's canonical JSON
// verifies under the accepted key whose fingerprint is the pinned one, and the receipt binds to the claim.
// Worker, Resume and Reconcile FromMinion all use this path. Claims pinned before receipt proofs existed
// have no fingerprint and are verified against the currently accepted key.
//
// Unverified events (cmd _minion_event, a data id that is not the tag's minion, another minion's tag, a
// receipt bound elsewhere, a proof that does not verify, a final-looking return the signed answer does not
// confirm) are counted through Hooks.UnverifiedEvent, logged once per request with the reason only, and
// trigger at most one early proof request per request per poll interval, outside the poll budget: a
// forger flooding the bus cannot spend the budget and force unknown, nor make the worker flood the minion.
//
// What a lying minion (any other authenticated minion identity) can do: flood the bus (which delays Salt
// itself; here it delays a result by about a poll interval per gap, spending no budget); delay a result
// (a forged running status answer raced ahead of the real one defers the proof to the next poll or to the
// run's own return); when the run's own return is lost, race every status answer with a forged running
// one and so keep the request unresolved until the window ends (unknown, never a false result; an event
// hint deferred by the limiter makes the next poll ask for the signed answer directly); fail a request at
// preflight with a forged capabilities answer (no proof advertised); fail a request that has not started yet
// with a forged refusal return (the worker fences the publication and the expected minion signs that it
// never ran: minion_refused, nothing ran, never a false success); make the worker spend a call timeout
// on an attest whose answers it keeps forging. What it cannot do: make a request succeed or fail with a
// result the expected minion did not sign for this request and this nonce (no replay across requests or
// polls), make a minion's receipt count under another minion's key, spend the
// poll budget, or get anything published (the dispatcher publishes only to the expected minion). What the
// expected minion itself can do: report any result for its own request (it runs the state; the proof
// authenticates it, it does not make it honest). Whoever holds a minion's private key, or can write the
// master's pki dir before preflight, is that minion.
//
// # Observability
//
// log/slog lines carry request_id, minion_id, jid and profile; never secrets or raw Salt returns. Hooks
// (WithHooks; none by default) receive counters and durations for Prometheus or OpenTelemetry adapters,
// and are the public way to follow a worker's progress (a demo narrates with Hooks.Published).
//
// # Claim records
//
// A Claim's Phase is one of the Phase* constants. Its Evidence (with a final result) is one of:
//
//	receipt     a minion receipt bound to the claim (return or status poll), proof verified
//	preflight   the master's own preflight failure; nothing published
//	refused     the publish reply proved nothing was published
//	none        unknown: no trustworthy evidence
//	asserted    an operator's assertion (Reconcile with Assert; never a minion receipt)
//	reconciled  a minion receipt fetched by an operator's Reconcile FromMinion
//
// Its ErrorCode (sanitized; also the code label of Hooks.Outcome, and Response.ErrorCode: "error_code" in
// JSON) is "" or one of (this table is the source of the README's):
//
//	lease_busy                the per-client execution lease was busy for Timers.LeaseWait
//	quarantined               the client has an unresolved dispatched request
//	claim_store_unreadable    the client's claims or leases cannot be read safely
//	capability_unverified     oduflow_job.capabilities did not report protocol 1 with receipt proofs and fencing
//	runtime_guard_failed      the module's runtime guard fails: it refused (or would refuse) to run unprotected
//	minion_key_unavailable    the master's accepted key for the minion cannot be read
//	event_bus_unavailable     the master event bus cannot be subscribed to, or delivers nothing (stalled)
//	role_not_allowed          the persisted profile/role pair is not in profiles.Fixed()
//	payload_unavailable       a custom claim's frozen payload cannot be read
//	publish_authentication    the publish was refused: authentication
//	publish_authorization     the publish was refused: authorization
//	publish_no_minions        the publish was refused: no minion matched
//	publish_bad_load          the publish was refused: bad load
//	publish_master_exception  the publish was refused: master exception
//	publish_not_sent          the request never left (a call or publish not sent)
//	publish_refused           another reply proving nothing was published
//	publish_outcome_unknown   the publish may have gone out (lost reply, timeout after send): unknown
//	no_trustworthy_return     no verified receipt within the window or budget: unknown
//	minion_reported_unknown   the minion's signed receipt says unknown
//	minion_refused            the module refused the run before any state work; fenced: it never runs
//	fenced                    the minion refused the run for its fencing token (a later token started first)
//	never_ran                 Reconcile fenced a publication that had not started: it never runs
//	worker_lost               the worker started after Timers.LaunchGrace (reported unknown meanwhile)
//	worker_launch_failed      a detached worker could not be started; nothing published
//	jid_collision             another claim of the client drew the same JID; nothing published
//	asserted                  an operator asserted the outcome
//	legacy_error              a legacy claim recorded an error
package oduflow
