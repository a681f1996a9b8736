package filestore

import (
	"context"
	"sync"
	"time"

	"github.com/cockroachdb/errors"

	"github.com/oduflow/oduflow-go/internal/errmark"
	"github.com/oduflow/oduflow-go/internal/safefile"
	"github.com/oduflow/oduflow-go/oduflow/claims"
)

// leasePool is the Store's safefile.LockPool, opened at the first lease: every request lock
// (run-<id>) and client lease (lease-<minion>) of the store is a byte range of ONE open file, so the
// requests in flight are not bounded by the open-file limit (a descriptor per held lock was two per
// request). The kernel still drops a dead holder's ranges, and the pool keeps the goroutines of this
// process apart. Every process sharing a claim directory must take these locks the same way (a process
// still using flock on the per-name files would not be excluded).
//
// The pool file's identity (device and inode) is checked by every lock operation (safefile). A pool file
// deleted or replaced while this store runs (a cleanup job, an operator) no longer excludes a process
// that opened the new file: the operation fails with safefile.ErrLockPoolReplaced, the store closes the
// old pool (every lock taken through it reads Held false, so a worker holding one can no longer record
// an intent) and retries the operation once through a pool on the new file. Create checks the pool the
// same way before it writes anything, so a pool that cannot be reopened fails Start with claims.ErrClaimStore
// instead of leaving a claim no worker can lock.
type leasePool struct {
	mu sync.Mutex
	p  *safefile.LockPool
}

// pool returns the current pool, opening it when there is none.
func (s *Store) pool() (*safefile.LockPool, error) {
	s.leases.mu.Lock()
	defer s.leases.mu.Unlock()
	if s.leases.p == nil {
		p, err := s.st.OpenLockPool()
		if err != nil {
			return nil, errmark.Mark(errors.Wrap(err, "oduflow: open lease pool"), claims.ErrClaimStore)
		}
		s.leases.p = p
	}
	return s.leases.p, nil
}

// reopenPool replaces stale (a pool whose file was replaced) by a pool on the directory's current file,
// unless another goroutine did already.
func (s *Store) reopenPool(stale *safefile.LockPool) {
	s.leases.mu.Lock()
	defer s.leases.mu.Unlock()
	if s.leases.p == stale {
		_ = stale.Close() // its locks read Held false from now on
		s.leases.p = nil
	}
}

// withPool runs op on the current pool and, when the pool file was replaced, once more on a new pool.
// Errors other than claims.ErrLeaseBusy match claims.ErrClaimStore.
func (s *Store) withPool(what string, op func(*safefile.LockPool) error) error {
	for attempt := 0; ; attempt++ {
		p, err := s.pool()
		if err != nil {
			return err
		}
		err = op(p)
		if err == nil || errors.Is(err, claims.ErrLeaseBusy) {
			return err
		}
		if errors.Is(err, safefile.ErrLockPoolReplaced) && attempt == 0 {
			s.reopenPool(p)
			continue
		}
		return errmark.Mark(errors.Wrapf(err, "oduflow: %s", errors.Safe(what)), claims.ErrClaimStore)
	}
}

// checkPool: the lease pool can be used (its file is the directory's, reopened when it was replaced).
func (s *Store) checkPool() error {
	return s.withPool("lease pool", (*safefile.LockPool).Check)
}

type fileLease struct {
	st *Store
	lk *safefile.Lock
}

func (l fileLease) Release() error { return l.lk.Release() }
func (l fileLease) Held() bool     { return l.lk.Held() }

// TryRequestLock implements Leases.
func (s *Store) TryRequestLock(ctx context.Context, requestID string) (_ claims.Lease, err error) {
	defer errmark.Boundary(&err)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var lk *safefile.Lock
	err = s.withPool("request lock", func(p *safefile.LockPool) error {
		var err error
		if lk, err = p.TryLock(requestLockPfx + requestID); errors.Is(err, safefile.ErrLocked) {
			return errmark.Mark(err, claims.ErrLeaseBusy)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return fileLease{s, lk}, nil
}

// RequestLockHeld implements Leases. The probe takes nothing (F_OFD_GETLK), so it never makes a starting
// worker's TryRequestLock fail.
func (s *Store) RequestLockHeld(ctx context.Context, requestID string) (_ bool, err error) {
	defer errmark.Boundary(&err)
	if err := ctx.Err(); err != nil {
		return false, err
	}
	var held bool
	err = s.withPool("request lock state", func(p *safefile.LockPool) error {
		var err error
		if held, err = p.IsLocked(requestLockPfx + requestID); errors.Is(err, safefile.ErrNotExist) {
			held, err = false, nil
		}
		return err
	})
	return held, err
}

// AcquireClientLease implements Leases.
func (s *Store) AcquireClientLease(ctx context.Context, minionID string, maxWait time.Duration) (_ claims.Lease, err error) {
	defer errmark.Boundary(&err)
	var lk *safefile.Lock
	err = s.withPool("client lease", func(p *safefile.LockPool) error {
		var err error
		lk, err = p.LockWait(ctx, clientLeasePfx+minionID, maxWait)
		if errors.Is(err, safefile.ErrLocked) || errors.Is(err, context.DeadlineExceeded) {
			return errmark.Mark(err, claims.ErrLeaseBusy)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return fileLease{s, lk}, nil
}
