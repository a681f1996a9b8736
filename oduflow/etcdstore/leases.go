package etcdstore

import (
	"context"
	"sync"
	"time"

	"github.com/cockroachdb/errors"
	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/oduflow/oduflow-go/internal/errmark"
	"github.com/oduflow/oduflow-go/oduflow/claims"
	"github.com/oduflow/oduflow-go/receipt"
)

// Lease is a lock held by a Store: a key created If(CreateRevision == 0) and attached to an etcd lease
// that a concurrency.Session keeps alive. Each lock has its own session, so releasing one (a revoke) or
// losing one never touches another, and a Release that cannot reach the cluster still frees the lock
// within the TTL (its keepalive has stopped).
type Lease struct {
	s         *Store
	key       string
	sess      *concurrency.Session
	createRev int64 // the lock key's create revision: CompareAndSwapHeld compares it

	once   sync.Once
	mu     sync.Mutex
	done   bool
	relErr error
}

// Release implements claims.Lease: it stops the keepalive and revokes the etcd lease (deleting the lock
// key). Idempotent; only the first call can return an error, and the lock is free within the TTL even
// then.
func (l *Lease) Release() (err error) {
	defer errmark.Boundary(&err)
	l.once.Do(func() {
		l.mu.Lock()
		l.done = true
		l.mu.Unlock()
		l.relErr = l.s.discard(l.sess)
	})
	return l.relErr
}

// Held implements claims.Lease: false after Release, or once the session is known lost (its etcd lease
// expired or was revoked, or the Store was closed).
func (l *Lease) Held() bool {
	l.mu.Lock()
	done := l.done
	l.mu.Unlock()
	if done {
		return false
	}
	select {
	case <-l.sess.Done():
		return false
	default:
		return true
	}
}

// Key is the lock's etcd key.
func (l *Lease) Key() string { return l.key }

// LeaseID is the etcd lease the lock key is attached to (operators, tests).
func (l *Lease) LeaseID() clientv3.LeaseID { return l.sess.Lease() }

// Done is closed once the session is lost or released.
func (l *Lease) Done() <-chan struct{} { return l.sess.Done() }

// newSession grants an etcd lease within ctx and keeps it alive for the Store's lifetime.
func (s *Store) newSession(ctx context.Context) (*concurrency.Session, error) {
	g, err := s.cli.Grant(ctx, s.ttl)
	if err != nil {
		return nil, readErr(err, "grant lease") // a lost grant leaks a lease that expires in the TTL
	}
	sess, err := concurrency.NewSession(s.cli, concurrency.WithLease(g.ID), concurrency.WithContext(s.ctx),
		concurrency.WithTTL(int(s.ttl)))
	if err != nil {
		_ = s.revoke(g.ID)
		return nil, readErr(err, "keep lease alive")
	}
	return sess, nil
}

// discard stops the session's keepalive and revokes its lease.
func (s *Store) discard(sess *concurrency.Session) error {
	sess.Orphan()
	return s.revoke(sess.Lease())
}

func (s *Store) revoke(id clientv3.LeaseID) error {
	ctx, cancel := context.WithTimeout(s.ctx, s.reqTimeout)
	defer cancel()
	if _, err := s.cli.Revoke(ctx, id); err != nil && !errors.Is(err, rpctypes.ErrLeaseNotFound) {
		return readErr(err, "revoke lease")
	}
	return nil
}

// lockHeld reads a lock key (read whole: etcd 3.6+ answers keys-only reads without the lease): held when it exists attached to an etcd lease. A lock key without
// a lease was not written by a Store (every lock is Put WithLease): nobody's keepalive will ever let it
// expire, so reading it as "held" would make its request read running forever and block its client for
// ever. It is ErrCorruptClaim instead, for Status, Quarantine and a worker alike, until an operator
// deletes it.
func lockHeld(kvs []*mvccpb.KeyValue) (bool, error) {
	if len(kvs) == 0 {
		return false, nil
	}
	if kvs[0].Lease == 0 {
		return false, corrupt("lock key without an etcd lease")
	}
	return true, nil
}

// tryLock creates key attached to the session's lease unless it exists. It returns whether it got it and
// the revision of the transaction (the key's create revision when it did). A lock key that exists
// without a lease is ErrCorruptClaim (lockHeld).
func (s *Store) tryLock(ctx context.Context, key string, sess *concurrency.Session) (bool, int64, error) {
	floor := s.rev.floor()
	resp, err := s.cli.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
		Then(clientv3.OpPut(key, s.holder, clientv3.WithLease(sess.Lease()))).
		Else(clientv3.OpGet(key)). // not keys only: etcd 3.6+ leaves the lease out of those
		Commit()
	if err != nil {
		return false, 0, writeErr(err, "take lock")
	}
	if err := s.rev.observe(resp.Header, floor); err != nil {
		return false, 0, err
	}
	if !resp.Succeeded {
		if _, err := lockHeld(resp.Responses[0].GetResponseRange().GetKvs()); err != nil {
			return false, 0, err
		}
	}
	return resp.Succeeded, resp.Header.Revision, nil
}

func (s *Store) runLockKey(request string) string { return s.prefix + runLocksDir + request }
func (s *Store) clientLockKey(minion string) string {
	return s.prefix + clientLocksDir + minion
}

// TryRequestLock implements claims.Leases.
func (s *Store) TryRequestLock(ctx context.Context, requestID string) (_ claims.Lease, err error) {
	defer errmark.Boundary(&err)
	if err := receipt.ValidateRequestID(requestID); err != nil {
		return nil, invalidID(err, "request id")
	}
	sess, err := s.newSession(ctx)
	if err != nil {
		return nil, err
	}
	key := s.runLockKey(requestID)
	ok, rev, err := s.tryLock(ctx, key, sess)
	if err != nil || !ok {
		// On an unknown outcome the revoke deletes the key if the Put did commit.
		_ = s.discard(sess)
		if err != nil {
			return nil, err
		}
		return nil, errors.Wrap(claims.ErrLeaseBusy, "etcdstore: request lock")
	}
	return &Lease{s: s, key: key, sess: sess, createRev: rev}, nil
}

// RequestLockHeld implements claims.Leases: the lock key exists (a linearizable read); a lock key
// without an etcd lease is ErrCorruptClaim.
func (s *Store) RequestLockHeld(ctx context.Context, requestID string) (_ bool, err error) {
	defer errmark.Boundary(&err)
	if err := receipt.ValidateRequestID(requestID); err != nil {
		return false, invalidID(err, "request id")
	}
	resp, err := s.readTxn(ctx, "request lock state", claimAnswerCap(1), rangeOp(s.runLockKey(requestID), 0, false))
	if err != nil {
		return false, err
	}
	return lockHeld(rangeKVs(resp, 0))
}

// AcquireClientLease implements claims.Leases: it tries to create the client's lock key and, while
// another holder has it, watches for its deletion, for at most maxWait (ErrLeaseBusy after that).
func (s *Store) AcquireClientLease(ctx context.Context, minionID string, maxWait time.Duration) (_ claims.Lease, err error) {
	defer errmark.Boundary(&err)
	if err := receipt.ValidateMinionID(minionID); err != nil {
		return nil, invalidID(err, "minion id")
	}
	l, err := s.acquire(ctx, s.clientLockKey(minionID), maxWait, "client lease")
	if err != nil {
		return nil, err
	}
	return l, nil
}

// acquire creates key on a new session's lease and, while another holder has it, watches for its
// deletion, for at most maxWait (ErrLeaseBusy after that). what names the lock in errors.
func (s *Store) acquire(ctx context.Context, key string, maxWait time.Duration, what string) (*Lease, error) {
	deadline := time.Now().Add(maxWait)
	var sess *concurrency.Session
	defer func() {
		if sess != nil {
			_ = s.discard(sess)
		}
	}()
	for {
		if sess != nil && !isOpen(sess) {
			_ = s.discard(sess) // lost while waiting (cluster unreachable longer than the TTL)
			sess = nil
		}
		if sess == nil {
			var err error
			if sess, err = s.newSession(ctx); err != nil {
				return nil, err
			}
		}
		ok, rev, err := s.tryLock(ctx, key, sess)
		if err != nil {
			return nil, err
		}
		if ok {
			l := &Lease{s: s, key: key, sess: sess, createRev: rev}
			sess = nil
			return l, nil
		}
		if !time.Now().Before(deadline) {
			return nil, errors.Wrapf(claims.ErrLeaseBusy, "etcdstore: %s", errors.Safe(what))
		}
		s.waitDeleted(ctx, key, rev, deadline)
		if err := ctx.Err(); err != nil {
			return nil, err
		}
	}
}

// waitDeleted returns once key is deleted after revision rev, or at the deadline (or on a watch error:
// the caller simply tries again).
func (s *Store) waitDeleted(ctx context.Context, key string, rev int64, deadline time.Time) {
	wctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	for wr := range s.cli.Watch(clientv3.WithRequireLeader(wctx), key, clientv3.WithRev(rev+1),
		clientv3.WithFilterPut()) {
		if wr.Err() != nil || len(wr.Events) > 0 || wr.Canceled {
			return
		}
	}
}

func isOpen(sess *concurrency.Session) bool {
	select {
	case <-sess.Done():
		return false
	default:
		return true
	}
}
