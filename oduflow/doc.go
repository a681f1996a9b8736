// Package oduflow is the controller API of oduflow-go: an at-most-once dispatcher of fixed Salt roles (and,
// through custom executions, digest-bound custom states) to client minions, with durable claims, a
// per-client execution lease, quarantine and explicit reconciliation.
//
// # API
//
// The basic flow imports oduflow, salt (the client) and receipt (request ids, profiles, statuses: the names
// the minion module shares):
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
// a receipt.Status: not_started, running, succeeded, failed or unknown (the receipt.Status* constants). A
// request id is bound to one profile and one minion: using it through another is refused with ErrMismatch
// (the message names the binding). Malformed ids are ErrInvalidInput (wrapping the receipt package's id
// errors) and are refused before any I/O: every call parses its minion and request id once, at the API
// boundary, and passes the parsed pair inward.
//
// # Claims
//
// Start writes a claim (phase claimed, JID preassigned, profile and its fixed role) durably with
// create-if-absent semantics before the worker starts; a repeated Start returns the current status and never
// publishes again. Claims live behind ClaimStore (create-if-absent, fenced compare-and-swap update, get,
// list by client) and Leases. Two implementations ship: FileClaimStore, the default, for the processes of
// one host, and oduflow/etcdstore for controller replicas sharing an etcd cluster (a nested module);
// oduflowtest.TestClaimStore is the contract's conformance suite. FileClaimStore: one file per request in a 0700 directory
// (default /var/cache/salt/oduflow-apply), files 0600, written through the internal safe file store (exclusive temp file,
// fsync, rename, directory fsync; symlinks, foreign owners, group/other bits and hard links refused).
// What a new Start waits for on FileClaimStore is two fsync waits in a row, the least a durable exclusive
// create allows (the claim's content must be durable before its name appears, and its name before the worker
// starts): first the claim's temporary file, concurrently with the client's index entries
// (clients/<minion>/<request> and open/<minion>/<request>, empty files created directly: nothing to tear,
// so no temporary file or data fsync) and, for a client new to the store, its index directories; then the
// rename into place and the claim directory's fsync, which concurrent Starts share (group commit). The
// index entries are durable before the claim's name can exist, so a crash anywhere leaves no claim (a
// retried Start creates it) or a claim its client's indexes list; FileClaimStore.Create lists the crash
// points. The checks before a claim is written are the claim store, the credentials, the event-bus
// subscription (connected now, and delivering) and one proof that the master answers its request channel
// (an unauthenticated clear-channel ping, shared by every Start for a few seconds: about 0.4 ms against the
// simulated master, 70 ns when cached); when one fails, Start returns ErrNotReady and nothing is written.
//
// The quarantine check reads only the client's unresolved set (UnresolvedLister: claims not final, or
// quarantining), an index both stores keep exact with every transition (file store: open/, made durable
// before a write that enters the set and removed after one that leaves it; etcd: keys written in the
// claim's own transactions), so Start and Status cost what the client's open requests cost, not its
// history. A request id is used once: etcd keeps the client index entry of a deleted claim as a
// tombstone (the id is never created again), and every final commit compares the claim's JID, so no run's
// result is ever committed onto a claim re-created under another JID (ErrCorruptClaim).
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
//  2. oduflow_job.capabilities must report protocol 1 with receipt proofs and fencing (version 1, ready),
//     and the master's accepted key for the minion must be readable, else a preflight failure. Checks of
//     several workers that wait at the same time share one publication (a list target of their minions, at
//     most 64; each minion's own return answers its worker, as a single call's would), so a busy
//     dispatcher makes about one publication per request instead of two; oduflow_job.run is never shared.
//  3. the dispatch intent (phase dispatching, dispatch time) is recorded durably, fenced on the claim's
//     revision and on both leases (ClaimStore.CompareAndSwapHeld), and the store issues the claim's
//     fencing token with it (see Fencing). If that write's acknowledgement is lost
//     (a store error with an OutcomeUnknown() method, e.g. etcd's leader dying mid-transaction), the worker
//     settles it while it still holds both leases: it re-reads the claim, retries the same fenced write if
//     it did not land, and goes on only once one more guarded write proves a landed intent its own;
//     undecidable within half the launch grace, nothing is published and the request reads unknown (so a
//     request is published if and only if its claim reached the intent, save that residual case). The
//     dispatcher's ONE
//     shared event-bus subscription registers the JID; oduflow_job.run(request_id, profile,
//     state_data_json, fence_token=<the claim's token>) is published once with the preassigned JID to the
//     minion alone (list target), the token as Salt's keyword argument. It is never retried. An
//     outcome-unknown publish (lost reply, timeout after send) is committed unknown at once and
//     quarantines; the worker then releases the client lease and goes on listening and polling
//     as in step 4, and a trustworthy receipt bound to the claim replaces unknown (releasing the
//     quarantine; a minion answering not_started never does). A reply proving nothing was published
//     (authentication, authorization, no minion, bad load, master exception) is failed with an error code
//     and does not quarantine.
//  4. it waits (<= 7200 s) for the return on the event bus and polls oduflow_job.status on the expected
//     minion on a schedule spreading 250 polls over the window, and at once after an event-bus gap (at
//     most one such poll per poll interval, outside the budget).
//     Both are hints: a final-looking one (a protocol-1 receipt bound to the claim) makes the worker ask
//     for the receipt proof, and only a verified proof commits a final result (see Receipt proofs).
//     A run the minion refused for its token (a verified fenced receipt: nothing ran) is final at once:
//     failed 0/0, error code fenced. A return of the expected minion that is the module's refusal (an
//     error answer, retcode not 0, "oduflow_job: ..."; e.g. "refusing to run unprotected" when its
//     runtime guard fails) makes the worker fence the publication (oduflow_job.fence) and ask for the
//     signed answer: a verified fenced receipt proves the run never started and never will, and the request
//     is final at once, failed 0/1 with runtime_guard_failed or minion_refused (evidence fenced). After each
//     publish the master acknowledged, nothing at all arriving on the bus within Timers.BusStall is a
//     "bus stalled" gap (salt.ErrBusStalled; Hooks.BusGap("bus_stalled")): the waiters poll, and new Starts
//     are refused (ErrNotReady) until an event arrives or 30 s pass. Window or budget spent: unknown.
//  5. the final result is committed under the claim's fenced update, only onto the claim this worker
//     read (the same JID); a final result committed meanwhile by someone else is kept. Network I/O never
//     happens under the claim record lock. A worker that cannot take its request lock at all (the lease
//     store unusable, not busy) commits its still-claimed claim failed (claim_store_unreadable): nothing
//     was published, and Status never reads it running.
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
// No claim: not_started. Final claim: its recorded status. Otherwise: unknown once the dispatch window
// (Timers.StatusExpiry, 7260 s, from the recorded dispatch intent) has run out, even if the lock is held;
// running while the request lock is held; with the lock free, unknown at once for a dispatched request
// (its worker took the lock before recording the intent and holds it until the result is committed, so a
// free lock means the worker is gone), and, for one never dispatched, running while the launch window
// (Timers.LaunchGrace, 30 s, from the claim's creation) is open (its worker may not hold the lock yet) and
// unknown afterwards (the worker disappeared). The worker's alarm is
// Timers.HardDeadline (7250 s) after dispatch, on its own monotonic clock. Timers is the one place the
// timers are expressed: DefaultTimers returns the production values, WithTimers replaces them.
//
// No rule compares one host's wall clock with a time another host wrote: the claim store measures both
// windows itself. etcdstore puts a launching key in the claim's creating transaction and a dispatch-window
// key in the intent's, each on an etcd lease of the window's TTL that nobody renews, so the cluster expires
// them; a window is open while its key exists, read with the claim and the request lock at one revision.
// FileClaimStore (one host's directory) stamps the claim with the host's boot id and CLOCK_BOOTTIME when it
// creates it and when it records the intent; a window is open while the host is in the same boot and no
// more than its length has passed since the stamp (another boot id: run out). A worker dispatches only
// if it took the request lock while the launch window was open (an in-process worker measures that on its
// process's monotonic clock from before the claim's Create was sent; a detached one reads the window from
// the store once it holds the lock), so a request Status called unknown for want of a worker is never
// dispatched later. The wall-clock times in a claim (CreatedAt, DispatchedAt, FinishedAt, ResumedAt;
// WithClock) are records for people. Consequences, whatever the replicas' clocks: a replica cannot read a
// live request unknown (its worker holds the lock, or its launch window is open, for every reader alike)
// nor accept an Assert on it (Reconcile requires unknown), and an abandoned request reads unknown at most
// the lock's expiry (etcd: the session TTL after the holder died; file: at once) or the launch window after
// it was created, whichever is later. A store that does not measure the windows (a ClaimStore without
// them) falls back to this dispatcher's clock against the claim's times, which assumes the replicas'
// clocks agree within a fraction of LaunchGrace.
//
// # Quarantine and reconciliation
//
// An unknown request that was dispatched (the intent was recorded, so the publish may have gone out) blocks
// every new dispatch to its client, across profiles, until Reconcile: FromMinion fetches the minion's exact
// receipt through oduflow_job.status (a caller-supplied receipt counts only if it equals the live reply).
// When the minion answers not_started, that is not "never": a paused worker may still publish. FromMinion
// then fences the publication first, oduflow_job.fence(request_id, jid, profile, token), and asks for the
// minion's signed answer: a fenced receipt is recorded as a trustworthy "never ran" (failed 0/1, error
// code never_ran, evidence fenced), which lifts the quarantine without any assertion, and that
// publication can never run afterwards; a started or terminal receipt is used as such. Assert records an
// operator's outcome as the terminal phase asserted (who, why), never counted as a minion receipt; on a
// request that may still be published (intent recorded, no terminal receipt) it fences first and is
// refused with ErrNotFenced, nothing written, unless the minion's signed answer confirms the fence (the
// run started: running or unknown); a terminal answer (never ran included) is recorded instead of the
// assertion. FromMinion also replaces an assertion by the minion's exact terminal receipt (evidence
// reconciled; who and why are kept for audit). Resume polls an unknown request again (at once, then on the
// schedule, for another window; in a detached worker when workers are detached); a trustworthy terminal
// receipt replaces unknown. Nothing ever creates a new request automatically: a retry is a new request id.
//
// # One answer for a client
//
// A request blocks new dispatches to its client (it quarantines it) when it was dispatched (its intent is
// recorded, so its publication may have gone out), has no final result other than unknown, and reads
// unknown by the status rules: no live worker, adopter or Resume holds its lock, or its window ran out.
// Quarantine lists exactly these requests; the preflight of a new request of the client fails
// quarantined exactly on them; Resume and Reconcile accept exactly them (a legacy one only through
// Reconcile Assert). A dispatched request that a live worker, adopter or Resume holds makes its client
// busy instead (lease_busy: it may be running on the minion), and Quarantine does not list it. A request
// never dispatched never blocks its client, whatever it reads. Before this rule, a dispatched request
// whose worker was gone read running for the rest of its launch grace: Quarantine said the client was
// clear while a new Start failed quarantined and Resume refused ErrNotUnknown.
//
// # Lifecycle: drain and adoption
//
// Close(ctx) drains: it stops admitting at once (a Start, CustomStart or Resume that would write or launch
// anything gets ErrClosed, nothing written; a repeated Start of an existing request still answers), lets
// the in-process workers and adoptions in flight finish until ctx ends, and then cancels the rest. A
// worker cancelled before its dispatch intent still holds its request lock, so nothing of its request can
// have been published: its claim is committed failed with dispatcher_closed (a retry is a new request
// id). A worker cancelled after its intent releases its request lock and client lease without committing
// anything: its request reads unknown at once and is adoptable. Detached workers are processes of their
// own; a killed one releases its locks with its process (file store) or its lease TTL (etcd).
//
// With WithAdoption(interval) a Dispatcher adopts requests whose worker is gone, at New and then every
// interval (default: the poll interval), at most WithMaxAdoptions (16) at a time, whichever replica or
// process they came from: it reads the unresolved requests of every client (UnresolvedScanner) and takes
// over each one whose request lock is free, under that lock:
//
//   - a dispatched request whose polling window is open (Timers.ExecutionWait from its dispatch or latest
//     Resume): with its client lease too, as its worker held it, the minion is asked at once; an answer of
//     not_started makes the adopter fence the publication (oduflow_job.fence, as Reconcile does) and record
//     the minion's signed answer, never_ran for a fenced publication, so a paused old worker can never
//     run it later; otherwise the adopter waits for the run's verified receipt exactly as the worker would
//     (its return on the event bus, polls on the schedule) and commits it, or unknown
//     (no_trustworthy_return) when the window is spent. It is never published again and no new request is
//     created. While the adopter holds it, the request reads running and its client is busy, not
//     quarantined. A request whose window is over, or that its worker itself committed unknown (window
//     or budget spent, the minion's own unknown; not an outcome-unknown publish, after which the worker
//     goes on listening and an adopter does so in its place), is left to an operator (Reconcile, Resume);
//   - a request never dispatched (phase claimed) past its launch grace is committed unknown with
//     worker_lost, as its own worker would if it started now; an adopter never publishes it. Publishing it
//     would be safe for at-most-once (the adopter holds its lock, and the intent is fenced on it), but not
//     for the caller: the request has read unknown since its launch grace ended, and a caller that saw
//     unknown may have retried under a new request id, so a late first publication would run the work
//     twice. Its unknown never quarantines (nothing was published).
//
// A new request of a client whose earlier request is adoptable (dispatched, worker gone, window open)
// does not fail quarantined at once when this Dispatcher adopts: its worker gives the client lease up
// to the adopter, wakes the adoption loop and takes the lease again, until the earlier request is
// resolved (then it goes on) or adopted (then the client is busy) or Timers.LeaseWait is spent.
//
// Adoption is what makes a rolling restart safe: each replica, stopped with Close and a grace period,
// finishes what it can and releases the rest, and any replica sharing the claim store (the file store
// between the processes of one host, etcdstore between hosts) polls the released requests to their
// minions' results. Nothing it does publishes: the minion's receipt, bound to the claim and signed, is the
// only evidence it commits, and the fencing token at the minion (the dispatch intent's) stops a
// publication the adopter fenced from ever starting. Adoption is off by default: a short-lived tool
// should not adopt; a service should. Dispatcher.Unresolved lists the unresolved requests of every
// client with their status and whether they quarantine their client, for dashboards and operators.
//
// # Fencing: a process pause of any length
//
// A lease cannot stop a worker that checked it and then paused (a GC pause, a frozen VM, a swapped-out
// container, SIGSTOP) for longer than the lease: when it goes on, it publishes, and the lease's new
// holder may have dispatched another request to the client meanwhile. Only the resource can refuse a
// stale writer. So the one fenced transition, the dispatch intent, issues a fencing token: a positive
// integer strictly increasing per client (ClaimStore.CompareAndSwapHeld; FileClaimStore: a per-client
// counter made durable before the claim holding it; etcdstore: a per-client base plus the revision of the
// intent's transaction), and above the minion's own high-water mark as its capabilities reported it at
// preflight (the floor: a store only ever raises a token to meet it). The claim records it, oduflow_job.run carries it, and the minion keeps, durably, the
// highest token it has started or fenced and refuses (a terminal fenced receipt, nothing executed) a run
// whose token is not higher. The argument, for a worker paused at each step (Hooks.Step) for any length:
//
//   - claimed, lease (before the intent): the worker's request lock or client lease expired (etcd) or is
//     still its own (file store: a stopped process keeps its kernel locks, so no one else takes them). It
//     goes on to CompareAndSwapHeld, which compares both leases with its write: an expired one fails it,
//     nothing is recorded or published. A claim that other replicas meanwhile called unknown and an
//     operator asserted has moved on, so the compare of its revision fails too.
//   - dispatch_recorded, publish_sending (intent recorded with token t, nothing sent yet): the claim
//     quarantines its client, so no other request of the client reaches its own intent, until a
//     reconciliation. FromMinion fences (the minion's mark becomes at least t and the JID is marked
//     never-to-run) before recording "never ran", and Assert requires that fence: so when the paused
//     worker publishes, the minion answers the fenced receipt and runs nothing. A second request
//     dispatched after the reconciliation has a token above t and runs; a late run with t arriving after
//     it is below the mark. Without a reconciliation the quarantine holds and the late run is the only
//     run of the client.
//   - publish_replied, returned, committed (published): the run was started (or refused) by the minion
//     before the pause ended; what follows only commits a result, and a result committed meanwhile by a
//     reconciliation is kept. The minion's execution lock and the quarantine keep a second request from
//     overlapping it: a reconciliation records only the minion's own started or terminal receipt.
//
// What the minion must persist: the mark and the JID index, committed (fsynced) before any state work, and
// fenced receipts like any receipt (receipt package, Fencing). A minion whose receipt directory is lost or
// replaced forgets both: it answers not_started for a run it made, and a fence then records "never ran"
// wrongly; the dispatcher pins the minion's key, so a re-provisioned minion with a new key cannot answer.
// What a store rollback can do: a rewound or replaced claim store would issue tokens again from a lower
// value; the floor lifts the next intent's token above the minion's mark, so new requests run, and a
// publication whose token the minion has passed is refused (fenced, nothing runs): a rollback can make
// an old request fail, never run a second time or overlap. It cannot undo a fence either: the mark lives
// on the minion. The floor is read before the intent and only raises a token, so the argument above is
// unchanged by it: a paused worker's token is still below every token issued after it for the client.
// The capabilities answer is not signed: a forged mark can only raise tokens (runs of older tokens get
// refused), and a mark at MaxFenceToken makes the client's intents fail with ErrClaimStore. A store
// that ignores the floor is caught before publishing: a token not above the mark fails the request
// (fence_behind, nothing published). Two runs on one client are also kept apart by the minion's own
// execution lock; fencing adds the order.
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
// and are the public way to follow a worker's progress (a demo narrates with Hooks.Published). Every hook
// gets the context of the work it reports and the request's identity (RequestRef: minion, request id,
// profile, JID), so that a span or an exemplar can be tied to the request. An in-process worker's
// context carries the values of the Start call's ctx (the caller's span or W3C trace context), never its
// cancellation; a detached worker is another process and starts from its own context: its events are
// joined to the caller's trace by the RequestRef (the nested modules oduflow/otel and oduflow/prom are the
// adapters; see their documentation).
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
//	fenced      the minion's signed fenced receipt after a Reconcile fenced the publication: never ran
//
// Its ErrorCode (sanitized; also the code label of Hooks.Outcome, and Response.ErrorCode: "error_code" in
// JSON) is "" or one of (this table is the source of the README's):
//
//	lease_busy                the per-client execution lease was busy for Timers.LeaseWait
//	quarantined               the client has an unresolved dispatched request
//	claim_store_unreadable    the client's claims or leases cannot be read safely
//	capability_unverified     oduflow_job.capabilities did not report protocol 1 with receipt proofs and fencing
//	runtime_guard_failed      the module's runtime guard fails: it refused (or would refuse) to run unprotected
//	fence_behind              the claim store issued a fencing token not above the minion's high-water mark
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
//	worker_lost               the worker took its lock after the launch window (reported unknown meanwhile)
//	worker_launch_failed      a detached worker could not be started; nothing published
//	jid_collision             another claim of the client drew the same JID; nothing published
//	asserted                  an operator asserted the outcome
//	fenced                    the minion refused the run: its fencing token was not above the minion's mark
//	never_ran                 a reconciliation fenced the publication before it started: it never runs
//	legacy_error              a legacy claim recorded an error
//	dispatcher_closed         Close cancelled the worker before its dispatch intent; nothing published
//
// # Structure
//
// Packages are floors, imports are arrows, and every arrow points down: nothing imports a floor above
// it (internal/ holds leaf helpers and imports only receipt):
//
//	floor 5  examples/oduflowctl   examples/controller                 callers
//	floor 4  oduflow/etcdstore   oduflow/oduflowtest   oduflowtest/fakeminion
//	                                                   stores and test kits built on the floors below
//	floor 3  oduflow                                                   this package: the dispatcher
//	floor 2  oduflow/catalog   salt   salt/salttest                    custom definitions; the Salt client; the simulator
//	floor 1  profiles   internal/...                                   roles and custom states; leaf helpers
//	floor 0  receipt                                                   the protocol shared with the minion module
//
// This package's files are its rooms, one per concept. One request walks them in this order:
//
//	start.go        Start: the ids parsed once (dispatcher.go's target), the claim read, the readiness
//	                check, the claim created
//	claim.go        the Claim record (phases, validation, encoding) ...
//	claimstore.go   ... kept behind ClaimStore and Leases ...
//	filestore*.go   ... by FileClaimStore: claim files, the client index, kernel-lock leases
//	worker.go       launch (in process; detached.go: a process of its own), locks, preflight (ping.go's
//	                capabilities, proof.go's accepted key), then publish and wait
//	commit.go       the fenced claim updates: the dispatch intent (and its fencing token), the final result,
//	                unknown replaced
//	publish.go      the one publish of oduflow_job.run (Publisher, publish slots, worker admission) and the
//	                read-only calls
//	wait.go         the wait for the return: events.go's shared event-bus subscription, scheduled and gap
//	                polls, the limiter of unverified events ...
//	proof.go        ... and oduflow_job.attest: only a verified proof commits (commit.go)
//	status.go       Status and Response: the status rules
//
// Beside the walk: reconcile.go (Reconcile, Resume, Quarantine), lifecycle.go (Close: the drain),
// adopt.go (adoption, WithAdoption), unresolved.go (the unresolved set, Unresolved across clients),
// ping.go (Ping), custom*.go (CustomStart, CustomStatus and their rules), dispatcher.go (New, Wait,
// Lookup), options.go (every other With*),
// timers.go, hooks.go, and errors.go (every exported sentinel).
package oduflow
