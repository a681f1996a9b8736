// Package claims is the claim store contract of the oduflow dispatcher: the durable record of one
// request (Claim, its Phase and its encoding), the interfaces a backend implements (ClaimStore and
// Leases, together Store), the optional capabilities the dispatcher uses when a store has them, the
// fencing tokens of the dispatch intent, and the errors a store returns. It holds no store and no
// dispatcher: package oduflow/filestore is the file-backed store (the dispatcher's default),
// oduflow/etcdstore the etcd one, package oduflow the dispatcher that runs on either, and
// oduflow/oduflowtest.TestClaimStore the conformance suite every implementation must pass. A store
// author imports this package only. Every name of the contract is declared here alone (until 0.5
// package oduflow declared each again as an alias; the CHANGELOG has the migration table), and so are
// the error codes a claim records (ErrorCode and its Code* values).
//
// # What a store promises
//
// ClaimStore's documentation is the contract, clause by clause; in short:
//
//   - Create is create-if-absent, linearizable and durable before it returns (ErrClaimExists for every
//     loser of a race); Get is a linearizable read (ErrNoClaim).
//   - CompareAndSwap commits only over the generation the caller read (ErrConflict otherwise, with the
//     current claim) and never changes an identity field; CompareAndSwapHeld does the same only while
//     every named lease is still held, checked atomically with the write (ErrLeaseLost: nothing
//     written). The dispatcher records the dispatch intent with it, so a worker whose leases expired
//     never publishes.
//   - The intent's CompareAndSwapHeld issues a fencing token (Claim.FenceToken, at most MaxFenceToken),
//     strictly greater than every token the store issued before for the client and than the caller's
//     floor, durable no later than the intent, never changed afterwards.
//   - ListByClient returns every claim of the client; a claim it cannot read fails the listing
//     (ErrCorruptClaim, optionally naming it: UnreadableRequestID() in the error chain), never silently
//     skipped.
//   - Leases are released when their holder dies (process exit, a session's TTL): the dispatcher reads
//     a held request lock as "a worker is alive".
//   - A write whose acknowledgement was lost returns an error carrying OutcomeUnknown() true in its chain
//     (a distributed store); the dispatcher re-reads instead of guessing.
//   - Store failures match ErrClaimStore, damaged records ErrCorruptClaim, malformed ids
//     ErrInvalidInput.
//
// # Optional capabilities
//
// A Store may implement these as well; oduflow.New finds each by a type assertion, and TestClaimStore
// checks each one a store has. What the dispatcher does without each:
//
//   - ClaimLockReader (GetWithRequestLock): the claim and its request lock read at one instant, in one
//     round trip. Without it Status reads the claim, then the lock: two round trips, the same answer.
//   - WindowedStore (StatusWindows, Liveness, GetWithLiveness): the launch and dispatch windows of
//     the status rules measured by the store itself (the file store: the host's CLOCK_BOOTTIME stamped
//     into the claim; etcdstore: keys on leases of the windows' TTL). Their lengths are given when the
//     store is built (filestore.WithStatusWindows, etcdstore.WithStatusWindows) and oduflow.New refuses a
//     store whose windows differ from its Timers. Without it the dispatcher compares
//     the claim's recorded wall-clock times with its own clock (oduflow.WithClock), which is only as good
//     as the replicas' clocks agree.
//   - UnresolvedLister (ListUnresolved): each client's unresolved claims apart from its history. Without
//     it the worker's preflight and Quarantine read ListByClient, so their cost grows with every request
//     the client ever had instead of its open ones.
//   - UnresolvedScanner (ScanUnresolved): every client's unresolved claims in bounded batches. Without
//     it Dispatcher.Unresolved answers an error matching errors.ErrUnsupported, and the adoption loop
//     (WithAdoption) cannot list what to adopt (it logs that error each round and adopts nothing).
//
// # The record
//
// A Claim holds identities, the fixed role, the preassigned JID, the phase (claimed -> dispatching ->
// dispatched -> terminal; asserted only by an operator's Reconcile), the timestamps, the fencing token,
// the generation and the sanitized outcome: nothing raw from Salt. MarshalBinary is the stored form
// (JSON, stable field order); UnmarshalBinary and Decode read it strictly (no duplicate key at any depth,
// nothing after the value, no unknown key in a protocol claim) and accept the spellings of earlier
// runners: a claim without a protocol field is legacy (Claim.Legacy), can never get a minion receipt,
// and one without profile fields is a configuration job. Validate checks identities and enumerations
// without echoing field contents.
package claims
