package oduflow

import (
	"context"
	"time"
)

// ClaimStore is the durable, shared record of claims. FileClaimStore is the default and only
// implementation; the interface is small so that a distributed store (etcd) can back several controller
// replicas sharing claims later.
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
//   - ListByClient returns every claim of one minion, legacy claims included, each as committed at some
//     point during the call.
type ClaimStore interface {
	Create(ctx context.Context, c *Claim) error
	Get(ctx context.Context, requestID string) (*Claim, error)
	CompareAndSwap(ctx context.Context, next *Claim) (*Claim, error)
	ListByClient(ctx context.Context, minionID string) ([]*Claim, error)
}

// Lease is a held lock; Release is idempotent.
type Lease interface {
	Release() error
}

// Leases are the liveness locks of the dispatcher. They must be released automatically when their holder
// dies (flock on process exit; an etcd lease on TTL expiry), because Status reads "request lock held" as
// "a worker is alive".
//
//   - TryRequestLock takes the request's execution lock without waiting (ErrLeaseHeld when held). It is
//     what Status calls "holds the execution lease".
//   - RequestLockHeld reports whether anyone (any process, this one included) holds it right now.
//   - AcquireClientLease takes the per-client execution lease shared by all profiles, waiting at most
//     maxWait (ErrLeaseBusy after that).
type Leases interface {
	TryRequestLock(ctx context.Context, requestID string) (Lease, error)
	RequestLockHeld(ctx context.Context, requestID string) (bool, error)
	AcquireClientLease(ctx context.Context, minionID string, maxWait time.Duration) (Lease, error)
}
