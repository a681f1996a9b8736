// Package etcdstore is an etcd-backed claim store (claims.ClaimStore and claims.Leases, package
// oduflow/claims), and the custom catalog (catalog.Store) beside them, so that several controller
// replicas (each a Dispatcher with its own Store) share claims, locks, custom definitions and executions.
// It imports the contract only (oduflow/claims), never the dispatcher.
//
//	st, err := etcdstore.Open(ctx, etcdstore.WithEndpoints("10.0.0.1:2379", "10.0.0.2:2379"),
//		etcdstore.WithPrefix("/oduflow/prod"), etcdstore.WithAuth(user, password))
//	cat, err := st.Catalog()
//	d, err := oduflow.New(client, bus, oduflow.WithClaimStore(st), oduflow.WithCustomCatalog(cat)) // st is a claims.Store: claims and leases
//
// The CLI reads ODUFLOW_CLAIMS=etcd://HOST:PORT[,HOST:PORT...]/PREFIX through ParseURL, and then keeps
// its custom catalog in the same store unless ODUFLOW_CATALOG_DIR names a directory.
//
// # Records
//
// A claim is one key, PREFIX/claims/<request id>, holding (*claims.Claim).MarshalBinary's JSON; it is read back with
// a strict decoder (one object, known fields only, no repeated field, no trailing data, at most
// MaxClaimSize bytes, the request id of its key) and anything else under the prefix is ErrCorruptClaim,
// never a panic. Create is one transaction If(CreateRevision(claim) == 0, CreateRevision(index entry) ==
// 0) Then(Put claim, Put PREFIX/clients/<minion id>/<request id>, Put PREFIX/open/<minion id>/<request
// id>): the per-client index entry is created exactly with the claim and never deleted, so it is also a
// tombstone: a request id whose claim was deleted (by hand or by a tool) is never created again, and
// Create fails with ErrCorruptClaim instead of starting the request a second time under a new JID.
// CompareAndSwap checks the generation of the record it read and writes If(ModRevision == the revision
// read), storing Generation+1. Claims are never deleted.
//
// The open entries are the client's unresolved set ((*claims.Claim).Unresolved: not final, or
// quarantining): Create puts one, and the CompareAndSwap transaction that moves a claim out of (or back
// into) the set deletes (or puts) it, so at every revision a client's open entries are exactly its
// unresolved claims. ListUnresolved (claims.UnresolvedLister) reads them (one prefix read, which fixes a
// revision) and their claims at that revision: the worker's preflight and Quarantine cost what the
// client's open requests cost, not its history, once the cluster compacts (--auto-compaction-retention):
// until then etcd's range over a client's open entries steps over the deleted entries of its resolved
// claims (BenchmarkClientHistory in etcdtest compacts, as a cluster in service does). Claims written before the open index existed get their
// entries once, from the first ListUnresolved that finds no PREFIX/meta/open-index-v1 (a scan of the
// client index; replicas of earlier versions must be stopped before one of this version starts).
// ListByClient reads every index entry of the client the same way.
//
// Reads are bounded: a claim read, and each listing batch of 64 claims, states the largest answer its
// records can make (claimAnswerCap: about 17 KiB a claim) and gRPC refuses a larger answer from its
// length prefix, before allocating it, with ErrCorruptClaim. 64 hostile 1.4 MiB records under one client
// cost a listing about 0.1 MiB instead of hundreds (TestHostileClaimsAllocationBounded). A listing batch
// whose snapshot revision was compacted meanwhile is read again at the latest revision, as are the
// batches after it: each claim is then as committed at some point during the call, which is what the
// quarantine argument below needs (TestListUnderCompaction: 3,000 claims, a compaction every 20 ms).
//
// A write whose acknowledgement is lost (timeout, leader change, reset connection, cancelled context)
// returns an error matching ErrOutcomeUnknown (and, for the dispatcher, carrying OutcomeUnknown() true):
// it may have committed. Only errors that prove the server
// refused the request (bad request, permission, quota, authentication) are not outcome-unknown. A read
// that fails (Get, ListByClient, RequestLockHeld, the probe of Open) matches claims.ErrClaimStore: nothing
// was written. The CLI maps the two to its exit statuses 5 and 3.
//
// # Custom catalog
//
// Store.Catalog is catalog.Store on the same cluster and prefix, record for record the semantics of
// catalog.FileStore (both pass oduflowtest.TestCatalogStore), with the checks of the catalog package's
// Validate methods on what it is given and on what it reads back:
//
//	PREFIX/catalog/def/<definition id>                    definition (JSON of catalog.Definition)
//	PREFIX/catalog/name/<sha256(company)>/<sha256(name)>  name index {company, name, definition_id}
//	PREFIX/catalog/asg/<minion id>/<definition id>        assignment
//	PREFIX/catalog/rid/<request id>                       request index {request_id, kind, minion_id, execution_id}
//	PREFIX/catalog/exe/<minion id>/<request id>           execution snapshot, its pointers and outcome
//	PREFIX/locks/server/<minion id>                       LockServer, attached to an etcd lease
//
// GetOrCreateDefinition and CreateDefinition write the name index and the definition in one transaction
// If(CreateRevision(name index) == 0, CreateRevision(definition) == 0): replicas racing one company and
// name create one definition, the others read it (an index whose definition is gone or renamed, which
// only a hand edit leaves, is replaced fenced on its mod revision). SaveSource, Rename (which moves the
// index in the same transaction), AddPointer (the pointer's request index and the execution listing it,
// together) and RecordOutcome are fenced on the mod revision of what they read and retried when another
// writer won. CreateExecution creates the request index and the snapshot in one transaction: the
// identical snapshot again returns the stored one, anything else under that request id is
// catalog.ErrExists. A final outcome (catalog.Outcome.Final) is never rewritten. LockServer is a lock key
// like the client lease, on its own etcd lease: a holder that dies frees it after the TTL, and a waiter
// gives up after 10 s with claims.ErrLeaseBusy.
//
// Every record read is at most 1 MiB (below etcd's default --max-request-bytes of 1.5 MiB; a larger
// record is refused on write with catalog.ErrInvalid), one JSON object with known fields only, no
// repeated or case-folded repeated key and no trailing data, the record of its own key and valid by the
// catalog's rules; anything else is catalog.ErrCorrupt, never a panic or a silent skip. A custom source is
// at most 64 KiB and a definition record about 4/3 of its source (base64); an execution record holds the source
// and the canonical payload (base64) plus about 110 bytes per pointer, typically a few KiB. Errors: a
// write whose acknowledgement was lost matches ErrOutcomeUnknown, a read that failed claims.ErrClaimStore.
//
// # Locks
//
// The request lock (PREFIX/locks/run/<request id>) and the per-client execution lease
// (PREFIX/locks/client/<minion id>) are keys created If(CreateRevision == 0) with Put(WithLease), each on
// its own etcd lease that a concurrency.Session keeps alive (TTL WithTTL, default 15 s). A holder that dies
// or is cut off from the cluster stops its keepalives and the key disappears when the TTL runs out;
// Release revokes the lease at once. AcquireClientLease watches the key's deletion for at most maxWait.
// RequestLockHeld is "the key exists"; GetWithRequestLock reads the claim and that key in one read
// transaction (the dispatcher's Status: one round trip, one snapshot). Lease.Held is false once released
// or once the session is known lost. A lock key that exists without an etcd lease was not written by a
// Store: no keepalive will ever let it expire, so it is not a lock but ErrCorruptClaim, for
// RequestLockHeld, GetWithRequestLock (so Status, Quarantine, Resume and Reconcile agree), TryRequestLock
// and AcquireClientLease (at once, instead of lease_busy for ever), until an operator deletes it.
//
// # Rewinds and edits
//
// etcd restarted from an earlier copy of its data (a data directory, a snapshot) answers from a past in
// which a published request may not exist yet or may still be claimed: reading it, a dispatcher would
// create or dispatch the request again. Every Store keeps the highest revision the cluster answered it
// with, and the cluster id; every read and write of the claim store records the mark when it is sent
// and refuses an answer below it, or from another cluster, with ErrRevisionRegressed (which matches
// claims.ErrClaimStore: the CLI exits 3) before anything read from it can lead to a publication. Reads
// are linearizable, so a request sent after an answer at revision r is always answered at r or later; the
// mark a request compares with is the one from before it was sent, never one raised by a concurrent
// request. What this cannot see: a Store opened after the rewind (a restarted replica, a detached worker's
// process) has no mark, and a rewound cluster whose revision has climbed past the mark again looks
// current; restoring a claim store from a backup is an operator's act that must be followed by a
// reconciliation of every request that was in flight. Edits are handled where they matter: a deleted
// claim is a tombstone (above), a lock key without a lease is ErrCorruptClaim, and the dispatcher's final
// commits compare the claim's JID, so a worker never commits its result onto a claim that was re-created
// under another JID.
//
// CompareAndSwapHeld is one transaction comparing the claim's mod revision and, for each lease, that its
// key still exists with the create revision recorded when it was taken and this session's lease id. A
// lock that expired, was revoked or was taken over by anybody since fails the transaction: nothing is
// written and the error matches claims.ErrLeaseLost.
//
// # At most once
//
// The dispatcher publishes a request only after CompareAndSwapHeld moved its claim from phase claimed to
// dispatching (the dispatch intent), and no code path publishes from any other phase. That transition is
// the single point every argument rests on:
//
//   - One request is never published twice. The intent transaction succeeds at most once per claim: it is
//     fenced on the mod revision of a claimed record, and after it the record is past claimed forever (no
//     transition leads back), so every later worker on any replica reads dispatching or later and stops.
//     Two workers racing the intent cannot both pass: the transactions are serialised by raft and the
//     second one's mod revision compare fails. A worker cut off from the cluster, or whose session expired
//     while it was paused, cannot pass it either: its lock key is gone (or belongs to another session with
//     another create revision), so the compare fails and it writes nothing and publishes nothing. A
//     transaction whose acknowledgement is lost is settled as below and never leads to a second
//     publication. Partitions change none of this: etcd commits a transaction only with a quorum, and a
//     minority member cannot serve the linearizable reads or the writes the store makes.
//   - A request is published (sent to the master) if and only if its claim reached the intent, lost
//     acknowledgements included. An intent write that ends ErrOutcomeUnknown may have committed, or may
//     still commit (a proposal the old leader had replicated). Its worker re-reads the claim with
//     backoff, for at most half the launch grace and only while it still holds both leases. Still
//     claimed at the generation it read: it sends the same guarded write again; both are fenced on the
//     same record, so at most one commits (the first, if it ever commits, is applied before the retry:
//     raft applies in log order, and an older term's entry missing from the log of a leader that has
//     committed one of its own never commits). Dispatching with this worker's dispatch time and key: it
//     confirms the record with one more guarded write, which commits only if the lock keys still carry
//     the create revisions and lease ids taken before the worker read the claim as claimed; a key with a
//     given create revision exists without interruption from its creation to its deletion, so the
//     request lock was this worker's the whole time, only its holder can write the intent, and the
//     intent is this worker's: it publishes. Anything else (another phase, a lease lost, no answer
//     within the window) publishes nothing. The residual case is an intent that committed while the
//     worker cannot prove it is its own (the cluster unreachable for the whole window, or a lease
//     expiring first): the claim is dispatching with no live worker, Status reports it unknown once the
//     request lock is gone (never running forever), its client stays quarantined, and that worker never
//     publishes it. TestIntentLostAck and TestLeaderStoppedMidStarts (the leader killed during 1,000
//     concurrent Starts) check "iff" and "at most once" for every request.
//   - A second request for the same client cannot be published while a first is unresolved. The preflight
//     (ListUnresolved, then the intent) runs while holding the client lease, and the intent transaction
//     compares that lease too. Every intent for a client is committed while its writer held the client
//     lease; leases of one key do not overlap in etcd's revision order (a new one is created only after
//     the old key was deleted). So an intent committed by anyone before this worker took the lease is in
//     the snapshot its ListUnresolved reads (the claim is unresolved from its creation, in the same
//     transaction as its open entry, until a transaction that resolves it deletes that entry; a batch
//     re-read after a compaction reads a later state, never an earlier one), and no intent can be
//     committed between that read and this worker's own intent without breaking this worker's lease
//     compare. A claim past the intent without a trustworthy terminal result (dispatching, dispatched,
//     terminal unknown) quarantines its client across profiles and replicas, because every replica lists
//     the same records.
//
// # Fencing tokens and process pauses
//
// A lease check cannot stop a worker that paused after it: a process stopped (GC, a frozen VM, SIGSTOP)
// between its intent and its publication for longer than the TTL loses both leases, Status on another
// replica reads the request unknown, and when it goes on it still publishes. The intent transaction
// therefore issues a fencing token, the client's fence base plus the transaction's own revision (fence.go):
// cluster revisions strictly increase and a base never decreases, so a client's tokens do, on every
// replica; the base (PREFIX/fencebase/<minion id>, absent until needed) is raised in the intent's own
// transaction when the minion's mark, which the worker passes as a floor, is ahead of this cluster. The minion refuses
// a run whose token is not above the highest it has started or fenced. A reconciliation of such a
// request (FromMinion when the minion says not_started, and any Assert) first calls oduflow_job.fence
// with the claim's token and records "never ran" only from the minion's signed fenced answer; the
// paused worker's late publication then runs nothing, and a second request, whose intent is a later
// revision, runs. At every other step a pause is covered by the leases (before the intent: the compare
// fails) or the request was already published and the quarantine and the minion's execution lock keep
// a second request from overlapping it (oduflow's package documentation goes through each step;
// TestPausedDispatcherAtEachStep stops a dispatcher process at each one past the TTL).
//
// A store rewound to an earlier revision (see Rewinds and edits) issues revisions again that the minion
// may have seen; the floor raises the base above the minion's mark, so a new request runs and a late
// publication of an old token is refused as fenced: nothing runs twice, and a restore cannot lower the
// mark, which lives on the minion. A client moved to another cluster, or fenced through another store
// too, is handled the same way (TestMinionMarkAheadOfTheCluster).
//
// # Time
//
// No wall-clock time decides whether a request is published, and none is compared across replicas. etcd
// measures lease TTLs on the leader with durations (a new leader restarts every lease's full TTL), so lock
// expiry does not depend on the replicas' clocks; it only makes an expired holder's compare fail. The two
// windows of the status rules are keys the cluster expires the same way:
//
//	PREFIX/windows/launch/<request id>    put by Create's transaction, on a lease of TTL LaunchGrace
//	PREFIX/windows/dispatch/<request id>  put by the transaction that records the dispatch intent, on a
//	                                      lease of TTL StatusExpiry
//
// Nobody renews those leases. One lease is granted per window length and second and shared by the windows
// opened in that second (a grant is a raft write: one per second, not one per request); its TTL is the
// window rounded up to whole seconds plus one, so a window lasts at least its full length and at most
// about 2 s more. A window is open while its key exists; GetWithLiveness reads the claim, the request lock
// and both keys in one read transaction (one revision), Liveness the three keys of a claim already read.
// The two lengths are given at Open (WithStatusWindows, default oduflow.DefaultTimers') and oduflow.New
// refuses a store whose windows differ from its Timers.LaunchGrace and StatusExpiry; replicas must use the
// same timers. The timestamps in a claim (CreatedAt, DispatchedAt, FinishedAt, ResumedAt) are records only. So a
// replica whose clock is minutes off reads the same statuses as the others: a claim whose worker has not
// yet taken its lock reads running until the launch key expires, a dispatched claim whose worker holds the
// lock reads running until the dispatch-window key expires, whatever the reader's clock, and Reconcile
// (which requires unknown) never accepts an Assert on such a claim (TestSkewedReplicaLaunchWindow,
// TestSkewedReplicaDispatchWindow: one replica 2 minutes ahead, one 2 minutes behind). A leader change
// restarts the windows' TTLs as it does the locks': a window can last up to one more TTL per leader change,
// never less. TTL enters Status in one more way: a worker that died keeps its request lock key until the
// TTL runs out, so its claim reads "running" for up to the TTL after the death (then unknown), and its
// client stays leased for that long. Claims created before the window keys existed have none: they read
// as if both windows had run out (a dispatched one whose old worker still runs reads unknown), so stop
// replicas of earlier versions before one of this version starts.
//
// # Servers
//
// The store uses only the v3 API of etcd 3.4 and later (transactions, leases, watches, reads at a
// revision inside a read transaction); the tests run etcd 3.7 embedded, and TestExternalCluster in etcdtest
// runs against any cluster named by ODUFLOW_ETCD_ENDPOINTS (checked with etcd 3.4.23).
//
// # Size
//
// One claim encodes to about 500 bytes of JSON (a final protocol-1 claim with a state digest: 511 bytes).
// Measured with etcd 3.7 (TestClaimFootprint in etcdtest): after the worker's four writes a claim with its
// index entry takes about 2.8 KiB of backend space while its history is kept, and about 0.9 KiB once
// compacted and defragmented. etcd's default quota of 2 GiB therefore holds about two million compacted
// claims (about 750 000 if history is never compacted). Claims are never deleted: run etcd with
// --auto-compaction-retention and archive old claims long before that.
//
// # Modules
//
// This package is its own module, github.com/oduflow/oduflow-go/oduflow/etcdstore, tagged
// oduflow/etcdstore/vX.Y.Z with each release of github.com/oduflow/oduflow-go (it imports that module's
// internal packages, so the two are released in lockstep: require the same version of both). It imports
// only go.etcd.io/etcd/client/v3 (v3.7.3; etcd servers 3.4 and later) and brings etcd's api/v3, client/pkg/v3
// and client/v3, grpc, protobuf and golang/protobuf, genproto's api and rpc, grpc-gateway/v2 (its protos are
// part of etcd's api), zap, multierr, x/net, go-semver and go-systemd; "go list -m all" is 102 modules here
// and 47 for github.com/oduflow/oduflow-go, which requires none of them. The tests that start a real etcd
// server (go.etcd.io/etcd/server/v3/embed) are one more module, oduflow/etcdstore/etcdtest, so that the
// server's own dependencies (bbolt, raft, otel, prometheus, cobra, grpc-gateway's runtime, ...) are not
// in this module's graph either; the go.work at the repository root builds all of them from the working
// copy.
package etcdstore
