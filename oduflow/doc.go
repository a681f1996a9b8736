// Package oduflow is the controller API of oduflow-go: an at-most-once dispatcher of fixed Salt roles (and,
// through custom executions, digest-bound custom states) to client minions, with durable claims, a
// per-client execution lease, quarantine and explicit reconciliation.
//
// The rules behind every sentence below, the threat model and the file map of this package are in the
// repository's docs/ARCHITECTURE.md; Example runs the basic flow against the built-in Salt master simulator.
//
// # API
//
// New builds a Dispatcher from a Publisher (a *salt.Client) and an EventSource (SaltEvents(addr) for a real
// master), with functional options: WithClaimDir or WithClaimStore, WithPKIDir, WithLogger, WithHooks,
// WithTimers, WithDetachedWorkers and WithWorkerLog, WithAdoption and WithMaxAdoptions, WithCustomCatalog,
// WithClock. Request ids, profiles and statuses are package receipt's (the names the minion module
// shares): receipt.NewRequestID, receipt.ProfileConfigure, receipt.StatusSucceeded.
//
// Every request call names its target the same way: ctx, minion, request, then what the call needs.
//
//   - [Dispatcher.Ping] reports a minion's [Readiness]; [Dispatcher.Ready] the dispatcher's own (a
//     readiness probe: master ping, credentials, live event bus).
//   - [Dispatcher.Start] claims a request durably, then its worker publishes it once; a repeated Start
//     returns the existing claim. [Dispatcher.Status] reads it. Both answer with [Response].
//   - [Dispatcher.CustomStart] and [Dispatcher.CustomStatus] do the same for a custom definition of the
//     catalog (WithCustomCatalog), answering with [CustomResponse].
//   - [Dispatcher.Reconcile] resolves an unknown request: [FromMinion] (the minion's exact receipt) or
//     [Assert] (an operator's outcome, who and why). [Dispatcher.Resume] polls an unknown request again.
//   - [Dispatcher.Lookup] reads a [Claim] (no profile needed), [Dispatcher.Quarantine] a client's
//     quarantining requests, [Dispatcher.Unresolved] every unresolved request across clients.
//   - [Dispatcher.Close] drains; [Dispatcher.Wait] waits for the in-process workers.
//
// A request id is bound to one profile and one minion: using it through another is refused with
// ErrMismatch. Malformed ids are ErrInvalidInput (wrapping the receipt package's id errors), refused before
// any I/O; minion ids follow the profile table's policy. No caller supplies a state name, function,
// argument, pillar or path: the profiles are those of the profile table (WithProfiles; by default the
// seeds' compiled-in roles, profiles.Fixed), which the minion holds too (its digest is checked before
// anything is published: CodeProfileTableMismatch), and custom states are validated and bound to their
// digest.
//
// # Statuses and responses
//
// Response is minion_id, request_id, jid (null for not_started), status, passed, total and error_code in
// JSON. Status is a receipt.Status: not_started (no claim), running (the claim is launching within
// Timers.LaunchGrace, or its worker holds the request lock), succeeded or failed (the recorded final
// result), unknown (the outcome cannot be proven: the publish reply was lost, no trustworthy return within
// Timers.ExecutionWait and the poll budget, the worker disappeared, or Timers.StatusExpiry has passed since
// dispatch). The claim store measures these windows itself, so no rule compares one host's wall clock with a
// time another host wrote. ErrorCode (type claims.ErrorCode) is "" or one of package claims' Code* constants (CodeLeaseBusy,
// CodeQuarantined, CodeOutcomeUnknown, ...): compare with them, never with string literals. The status says
// whether the run may have happened (failed: a new request id may follow; unknown: reconcile, never start a
// replacement), the code says why; it is also the code label of Hooks.Outcome, and the repository README's
// "Error codes" table lists each one.
//
// # Claims
//
// A claim (phase claimed, JID preassigned, profile and its fixed role) is written with create-if-absent
// semantics before the worker starts, and the dispatch intent is recorded durably before the one
// publication; a publish is never retried. Claims live behind ClaimStore and Leases (a request lock and a
// per-client execution lease shared by all profiles): the contract is package oduflow/claims (this
// package declares each of its names too, as aliases), which a store imports instead of the dispatcher.
// filestore.Store (package oduflow/filestore), the default, keeps them in a 0700 directory (default
// /var/cache/salt/oduflow-apply) for the processes of one host; the nested module oduflow/etcdstore keeps
// them on etcd for replicas on several hosts; oduflowtest.TestClaimStore is the contract's conformance
// suite. Before a new claim is written, Start checks that it can dispatch (the
// claim store, the credentials, a live event bus, a master that answers); when it cannot, it returns
// ErrNotReady and writes nothing.
//
// # The worker
//
// A worker takes the request lock and the client lease, checks the minion at preflight
// (oduflow_job.capabilities: protocol 1 with receipt proofs, fencing and its runtime guard; the master's
// accepted key for the minion, read from WithPKIDir; Timers.CapabilityReuse lets it reuse a clear
// answer it got less than that long ago), records the dispatch intent with the client's next
// fencing token, publishes oduflow_job.run once to that minion alone, and waits for the return on the
// event bus while it polls oduflow_job.status on a schedule. A return or a poll is a hint: only the
// minion's receipt signed over a fresh nonce the dispatcher chose, verified against the pinned key and
// bound to the claim, commits a final result. A module that advertises it ("proof": {"run_return":
// true}) signs its run's terminal receipt in the run's own return, over a nonce the run publication
// carries (proof_nonce): two minion jobs per request. Otherwise, or when that return is lost or does not
// verify (a forgery, a replay), the worker asks oduflow_job.attest with a fresh nonce, as an adopter
// always does. Workers run in-process by default; WithDetachedWorkers(exe) starts each one as a
// process of the same binary, whose main calls RunWorkerIfRequested first.
//
// The worker runs in phases (worker.go: preflight, intent, publish, hand-off), each adding what it
// acquires to one hold released exactly once. A request in flight costs no goroutine: once its run is
// published, the wait for the return is parked (one timer, the event waiter's notification and the
// context's AfterFunc wake it) and a goroutine runs only while there is work. Measured on the
// 10,000-in-flight row, parked waits peak at about 101 MiB RSS with 8 goroutines; a goroutine per wait
// peaks at about 237 MiB (10,008 goroutines, 83 MiB of stacks), 1.8 times the 128 MiB bar, so the
// dispatcher parks (wait.go).
//
// # Quarantine, reconciliation and fencing
//
// An unknown request that was dispatched blocks every new dispatch to its client, across profiles, until
// Reconcile: a new Start to the client fails quarantined. FromMinion records the minion's exact receipt;
// when the minion has not started the run, it fences the publication first (oduflow_job.fence), so a
// paused worker can never run it later, and records never_ran. Assert on a request that may still be
// published needs that fence (ErrNotFenced otherwise). The fencing token rises strictly per client and the
// minion refuses a run whose token is not above the highest it has seen, so a process paused for any length
// never runs a request after its reconciliation. Nothing ever creates a new request automatically: a retry
// is a new request id.
//
// # Lifecycle
//
// Close(ctx) stops admitting at once (ErrClosed, nothing written), lets the workers in flight finish until
// ctx ends and releases the rest: a request cut before its intent is failed with dispatcher_closed, one
// cut after it reads unknown and is adoptable. With WithAdoption a Dispatcher takes over the unresolved
// requests whose worker is gone, whichever replica or process they came from, and follows them to their
// minion's signed result; it never publishes them again.
//
// # Observability
//
// log/slog lines carry request_id, minion_id, jid and profile, never secrets or raw Salt returns. Hooks
// (WithHooks; none by default) receive counters and durations with the context of the work they report
// and its RequestRef, for adapters such as the nested modules oduflow/prom and oduflow/otel.
//
// # Errors
//
// Errors are values for errors.Is and errors.As: ErrInvalidInput, ErrMismatch, ErrNotReady, ErrNotUnknown,
// ErrNotFenced, ErrUnresolved, ErrNoClaim, ErrCorruptClaim, ErrWorkerLaunch, ErrClaimStore, ErrClosed; for
// custom executions ErrNeedsConfirmation, ErrApplyAgainWithoutTerminal, ErrInitialConfigurationMissing,
// ErrUncertain and ErrNotAssigned; for stores ErrClaimExists, ErrConflict, ErrLeaseBusy and ErrLeaseLost.
// Every error the package returns is one short line in any slog handler and for %+v, with the details
// reachable through errors.As with the standard library: CustomStart's refusals name the execution to deal
// with (*NeedsConfirmationError, *UncertainError), Start and Resume the request whose detached worker did
// not start (*WorkerLaunchError). No caller needs cockroachdb/errors.
package oduflow
