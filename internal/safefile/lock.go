package safefile

import (
	"context"
	"sync"
	"time"

	"github.com/cockroachdb/errors"
	"golang.org/x/sys/unix"
)

const lockSuffix = ".lock"

// Lock is a held lock on "<name>.lock" in a Store: a flock(2) of that file
// (Store.TryLock), or a byte range of a LockPool's one open file. Either way
// the kernel releases it when the holding process exits or is killed.
type Lock struct {
	mu   sync.Mutex
	fd   int // flock: the open lock file; -1 once released (and always for a pool lock)
	name string
	pool *LockPool // a pool lock: held while pool.held[name] is this Lock
	key  lockKey   // a pool lock: the lock file whose inode numbers its range
	// pstate is a pool lock's state (guarded by pool.mu): its range is being taken, is held, or is
	// being released. The kernel call runs outside the pool's mutex; the table entry keeps the name
	// taken meanwhile.
	pstate poolState
}

type poolState uint8

const (
	poolTaking poolState = iota
	poolHeld
	poolReleasing
)

// Name returns the lock's name (without the .lock suffix).
func (l *Lock) Name() string { return l.name }

// Held reports whether the lock has not been released. A flock is never taken away from a living holder.
// A pool lock also checks that its lock file and the pool's file are still the ones in the directory
// (a replaced file would let another process take the same name).
func (l *Lock) Held() bool {
	if l.pool != nil {
		return l.pool.stillHeld(l)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.fd >= 0
}

// Release unlocks and closes the lock file. Calling it again is a no-op.
func (l *Lock) Release() error {
	if l.pool != nil {
		return l.pool.release(l)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.fd < 0 {
		return nil
	}
	err := unix.Flock(l.fd, unix.LOCK_UN)
	if cerr := unix.Close(l.fd); err == nil {
		err = cerr
	}
	l.fd = -1
	if err != nil {
		return errors.Wrap(err, "safefile: release lock")
	}
	return nil
}

// openLock opens (creating 0600 when absent) the lock file for name, with the
// same safety rules as records: the open is non-blocking and anything but a
// regular file (a FIFO, socket or device planted at the lock name) is refused
// at once with ErrNotRegular, so a hostile lock file never hangs a caller and
// never reads as "busy".
func (s *Store) openLock(name string, create bool) (int, error) {
	if err := validName(name); err != nil {
		return -1, err
	}
	dirfd, err := s.openDir()
	if err != nil {
		return -1, err
	}
	defer unix.Close(dirfd)
	return s.openLockAt(dirfd, name+lockSuffix, create)
}

// openLockAt opens file (a lock file name, already checked) in dirfd under the
// rules of openLock.
func (s *Store) openLockAt(dirfd int, file string, create bool) (int, error) {
	if create {
		fd, err := unix.Openat(dirfd, file, unix.O_RDWR|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, 0o600)
		if err == nil {
			if err := s.fixCreated(fd, 0o600); err != nil {
				_ = unix.Close(fd)
				return -1, errors.Wrapf(err, "safefile: prepare %s", s.path(file))
			}
			return fd, nil
		}
		if err != unix.EEXIST {
			return -1, s.classifyOpenErr(dirfd, file, s.path(file), err, false)
		}
	}
	flags := unix.O_RDONLY
	if create {
		flags = unix.O_RDWR
	}
	return s.openFile(dirfd, file, flags, 0)
}

// TryLock takes the exclusive lock name without waiting: ErrLocked when any
// holder (this or another process) has it.
func (s *Store) TryLock(name string) (*Lock, error) {
	fd, err := s.openLock(name, true)
	if err != nil {
		return nil, err
	}
	for {
		err = unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB)
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		_ = unix.Close(fd)
		if err == unix.EWOULDBLOCK {
			return nil, errors.Wrapf(ErrLocked, "%s", name)
		}
		return nil, errors.Wrapf(err, "safefile: lock %s", name)
	}
	return &Lock{fd: fd, name: name}, nil
}

// LockWait polls TryLock until it succeeds, ctx ends, or maxWait has passed
// (then ErrLocked). maxWait <= 0 means a single attempt.
func (s *Store) LockWait(ctx context.Context, name string, maxWait time.Duration) (*Lock, error) {
	return lockWait(ctx, name, maxWait, s.TryLock)
}

// lockWait polls try (5 ms, doubling to 200 ms) for at most maxWait.
func lockWait(ctx context.Context, name string, maxWait time.Duration, try func(string) (*Lock, error)) (*Lock, error) {
	deadline := time.Now().Add(maxWait)
	interval := 5 * time.Millisecond
	for {
		l, err := try(name)
		if err == nil || !errors.Is(err, ErrLocked) {
			return l, err
		}
		left := time.Until(deadline)
		if left <= 0 {
			return nil, errors.Wrapf(ErrLocked, "%s: still held after %s", name, maxWait)
		}
		wait := min(interval, left)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, errors.Wrapf(ctx.Err(), "safefile: waiting for lock %s", name)
		case <-t.C:
		}
		interval = min(interval*2, 200*time.Millisecond)
	}
}

// IsLocked reports whether some process holds lock name right now. A missing
// lock file means not locked. The probe takes a shared flock for an instant,
// so a TryLock racing with it may see ErrLocked spuriously; callers treat
// ErrLocked as "busy" anyway.
func (s *Store) IsLocked(name string) (bool, error) {
	fd, err := s.openLock(name, false)
	if err != nil {
		if errors.Is(err, ErrNotExist) {
			return false, nil
		}
		return false, err
	}
	defer unix.Close(fd)
	for {
		err = unix.Flock(fd, unix.LOCK_SH|unix.LOCK_NB)
		if err != unix.EINTR {
			break
		}
	}
	if err == unix.EWOULDBLOCK {
		return true, nil
	}
	if err != nil {
		return false, errors.Wrapf(err, "safefile: probe lock %s", name)
	}
	_ = unix.Flock(fd, unix.LOCK_UN)
	return false, nil
}
