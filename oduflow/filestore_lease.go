package oduflow

import (
	"context"
	"sync"
	"time"

	"github.com/cockroachdb/errors"

	"github.com/oduflow/oduflow-go/internal/errmark"
	"github.com/oduflow/oduflow-go/internal/safefile"
)

// leasePool is the FileClaimStore's one safefile.LockPool, opened at the first lease: every request lock
// (run-<id>) and client lease (lease-<minion>) of the store is a byte range of ONE open file, so the
// requests in flight are not bounded by the open-file limit (a descriptor per held lock was two per
// request). The kernel still drops a dead holder's ranges, and the pool keeps the goroutines of this
// process apart. Every process sharing a claim directory must take these locks the same way (a process
// still using flock on the per-name files would not be excluded).
type leasePool struct {
	once sync.Once
	p    *safefile.LockPool
	err  error
}

func (s *FileClaimStore) pool() (*safefile.LockPool, error) {
	s.leases.once.Do(func() { s.leases.p, s.leases.err = s.st.OpenLockPool() })
	if s.leases.err != nil {
		return nil, errors.Wrap(s.leases.err, "oduflow: open lease pool")
	}
	return s.leases.p, nil
}

type fileLease struct {
	st *FileClaimStore
	lk *safefile.Lock
}

func (l fileLease) Release() error { return l.lk.Release() }
func (l fileLease) Held() bool     { return l.lk.Held() }

// TryRequestLock implements Leases.
func (s *FileClaimStore) TryRequestLock(ctx context.Context, requestID string) (_ Lease, err error) {
	defer errmark.Boundary(&err)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	p, err := s.pool()
	if err != nil {
		return nil, err
	}
	lk, err := p.TryLock(requestLockPfx + requestID)
	if err != nil {
		if errors.Is(err, safefile.ErrLocked) {
			return nil, errmark.Mark(err, ErrLeaseBusy)
		}
		return nil, errors.Wrap(err, "oduflow: request lock")
	}
	return fileLease{s, lk}, nil
}

// RequestLockHeld implements Leases. The probe takes nothing (F_OFD_GETLK), so it never makes a starting
// worker's TryRequestLock fail.
func (s *FileClaimStore) RequestLockHeld(ctx context.Context, requestID string) (_ bool, err error) {
	defer errmark.Boundary(&err)
	if err := ctx.Err(); err != nil {
		return false, err
	}
	p, err := s.pool()
	if err != nil {
		return false, err
	}
	held, err := p.IsLocked(requestLockPfx + requestID)
	if err != nil {
		if errors.Is(err, safefile.ErrNotExist) {
			return false, nil
		}
		return false, errors.Wrap(err, "oduflow: request lock state")
	}
	return held, nil
}

// AcquireClientLease implements Leases.
func (s *FileClaimStore) AcquireClientLease(ctx context.Context, minionID string, maxWait time.Duration) (_ Lease, err error) {
	defer errmark.Boundary(&err)
	p, err := s.pool()
	if err != nil {
		return nil, err
	}
	lk, err := p.LockWait(ctx, clientLeasePfx+minionID, maxWait)
	if err != nil {
		if errors.Is(err, safefile.ErrLocked) || errors.Is(err, context.DeadlineExceeded) {
			return nil, errmark.Mark(err, ErrLeaseBusy)
		}
		return nil, errors.Wrap(err, "oduflow: client lease")
	}
	return fileLease{s, lk}, nil
}
