package claims

import (
	"context"
	"time"
)

// ClaimStore is the durable, shared record of claims. Two implementations ship: oduflow/filestore (the
// dispatcher's default, filestore.Store: the processes of one host share a directory) and
// oduflow/etcdstore (controller replicas share an etcd cluster); oduflowtest.TestClaimStore checks an
// implementation against this contract.
//
// The contract an implementation must meet:
//
//   - Create is create-if-absent and linearizable: among any number of concurrent Create calls for one
//     request id, from any number of processes or replicas, exactly one succeeds; the others get an error
//     matching ErrClaimExists. A successful Create is durable before it returns (the dispatcher launches the
//     worker only afterwards). The stored claim gets Generation 1.
//     (etcd: a transaction If(CreateRevision(key) == 0) Then(Put).)
//   - Get returns the latest committed claim (linearizable read), or an error matching ErrNoClaim.
//   - CompareAndSwap is a fenced update: it commits next only if the stored generation still equals
//     next.Generation, and stores it with Generation+1; otherwise it returns the current claim with an error
//     matching ErrConflict. Durable before it returns. The identity fields (minion id, request id, profile,
//     role, digest, JID, created) must not change; an implementation may refuse such an update.
//     (etcd: If(ModRevision(key) == rev) or a generation field compare.)
//   - CompareAndSwapHeld is CompareAndSwap guarded by leases: it commits next only if the stored generation
//     still equals next.Generation AND every lease in held is still held by the caller at the moment of the
//     commit, checked atomically with the write (etcd: one transaction comparing the record's mod revision
//     and each lease key's owning session). When a lease is gone it writes nothing and returns an error
//     matching ErrLeaseLost. held must come from the Leases paired with this store (an implementation
//     refuses foreign leases with ErrLeaseLost). The dispatcher uses it for exactly one transition: to the
//     recorded dispatch intent, so that a worker whose leases expired never records an intent and never
//     publishes. Final commits use plain CompareAndSwap, so that a late trustworthy result still lands.
//   - Fencing tokens: the CompareAndSwapHeld that moves a claim from phase claimed to dispatching issues
//     a fencing token and returns (and stores) it in Claim.FenceToken: an integer from 1 to MaxFenceToken,
//     strictly greater than every token issued before for the same client (minion id), by any process or
//     replica, whichever leases the callers hold, and strictly greater than the floor the caller passes
//     in next.FenceToken on that call (the minion's high-water mark as its capabilities reported it, so
//     that a new or restored store, or one shared by a client with another store, does not issue tokens
//     the minion would refuse; 0: no floor). Once issued it never changes: every later write keeps it
//     whatever next carries, and Get returns it. A floor at MaxFenceToken cannot be met: an error
//     matching ErrClaimStore, nothing written. The token must be durable no later than the intent
//     it belongs to, and never issued twice, also across a crash between the two (a gap is fine).
//     (etcd: the revision of the intent's transaction plus a per-client base raised to meet a floor;
//     the file store: a per-client counter, empty files fences/<minion>/t-<N>, the new name made durable
//     before the claim holding it.) The minion refuses a run whose token is not above the highest it has
//     started or fenced, so a store that issued a token again would only get runs refused, never run
//     twice; a store restored from a backup issues tokens above the minion's mark again through the
//     floor, and a floor only ever raises a token, so it cannot make a late publication run.
//   - ListByClient returns every claim of one minion, legacy claims included, each as committed at some
//     point during the call. A store may also keep the client's unresolved set (UnresolvedLister), which
//     the preflight and Quarantine then read instead.
//   - Errors that say the store itself failed (it cannot be read, a disk is full or read-only, a lease
//     store cannot be used) match ErrClaimStore; a damaged record matches ErrCorruptClaim; a malformed
//     minion or request id argument matches ErrInvalidInput. A listing that meets a claim it cannot read
//     fails (never skips it: it may be the client's unresolved dispatch) and may name it: some error in
//     the chain has a method UnreadableRequestID() string (errors.As), which the dispatcher logs (the
//     file store's do).
//   - A write whose acknowledgement is lost (a distributed store: timeout, leader change) returns an error
//     that is neither nil nor ErrClaimExists/ErrConflict/ErrLeaseLost (etcdstore.ErrOutcomeUnknown): it
//     may have committed. A Create so failed means "maybe created": the dispatcher returns the error and
//     launches nothing, so such a claim stays in phase claimed and is never published; the caller re-reads.
//     An implementation whose writes can end so marks the error with a method OutcomeUnknown() bool
//     reporting true somewhere in its chain (errors.As): an intent write so failed is re-read and
//     settled by the worker (published only if the intent is proven to be its own), any other error of
//     the intent write means nothing was written.
type ClaimStore interface {
	Create(ctx context.Context, c *Claim) error
	Get(ctx context.Context, requestID string) (*Claim, error)
	CompareAndSwap(ctx context.Context, next *Claim) (*Claim, error)
	CompareAndSwapHeld(ctx context.Context, next *Claim, held ...Lease) (*Claim, error)
	ListByClient(ctx context.Context, minionID string) ([]*Claim, error)
}

// Lease is a held lock; Release is idempotent. Held reports whether the caller still holds it as far as the
// holder can tell locally (false after Release, or once an expiring lease is known lost); the authoritative
// check is the one CompareAndSwapHeld makes atomically with its write.
type Lease interface {
	Release() error
	Held() bool
}

// Leases are the liveness locks of the dispatcher. They must be released automatically when their holder
// dies (flock on process exit; an etcd lease on TTL expiry), because Status reads "request lock held" as
// "a worker is alive".
//
//   - TryRequestLock takes the request's execution lock without waiting (ErrLeaseBusy when held). It is
//     what Status calls "holds the execution lease".
//   - RequestLockHeld reports whether anyone (any process, this one included) holds it right now.
//   - AcquireClientLease takes the per-client execution lease shared by all profiles, waiting at most
//     maxWait (ErrLeaseBusy after that).
type Leases interface {
	TryRequestLock(ctx context.Context, requestID string) (Lease, error)
	RequestLockHeld(ctx context.Context, requestID string) (bool, error)
	AcquireClientLease(ctx context.Context, minionID string, maxWait time.Duration) (Lease, error)
}

// Store is what a Dispatcher runs on (oduflow.WithClaimStore): the claims and the liveness locks of one
// backend in one value, so the compiler checks both. filestore.Store (the default) and etcdstore.Store
// implement it.
//
// A Store may also implement these optional capabilities; the Dispatcher uses each one it finds (a type
// assertion at New), and the conformance suite oduflowtest.TestClaimStore checks each one a store has:
//
//   - ClaimLockReader: the claim and its request lock read at one instant (Status in one round trip).
//   - WindowedStore: the status rules' launch and dispatch windows measured by the store itself. Without
//     it the Dispatcher compares the claim's recorded times with its own clock (oduflow.WithClock), which is
//     only as good as the replicas' clocks agree.
//   - UnresolvedLister: each client's unresolved claims apart from its history (preflight and Quarantine
//     read only those; without it they read ListByClient).
//   - UnresolvedScanner: every client's unresolved claims (Dispatcher.Unresolved and adoption need it;
//     without it they answer an error matching errors.ErrUnsupported).
//
// A write whose acknowledgement is lost is marked, not a capability: see ClaimStore.
type Store interface {
	ClaimStore
	Leases
}

// ClaimLockReader is an optional capability of a Store: the claim and whether its request lock is held,
// read at one instant in one round trip (etcdstore: one read transaction instead of two reads). Status
// uses it; the answer must be that of Get then RequestLockHeld, with both read at the same point in time.
type ClaimLockReader interface {
	GetWithRequestLock(ctx context.Context, requestID string) (*Claim, bool, error)
}
