package safefile

import (
	"context"
	"math"
	"os"
	"sync"
	"time"

	"github.com/cockroachdb/errors"
	"golang.org/x/sys/unix"
)

// reasonPoolReplaced is the UnsafePathError reason of ErrLockPoolReplaced.
const reasonPoolReplaced = "lock_pool_replaced"

// poolFileName is the one file a LockPool keeps open. It starts with a dot, which no record or lock
// name may, so it never collides with one and List never shows it.
const poolFileName = ".locks"

// lockKey identifies a lock file: its device and inode number. The inode number is the byte offset of
// the lock's range in the pool file; two lock files that exist at the same time on one file system never
// share it, so the mapping from names to ranges is collision-free for as long as the lock files are
// kept (they are never removed).
type lockKey struct{ dev, ino uint64 }

// LockPool takes the named locks of a Store through ONE open file instead of one descriptor per held
// lock: lock "<name>" is the one-byte Linux open-file-description (OFD) write lock at offset
// inode("<name>.lock") of the pool file "<dir>/.locks". The per-name lock files still exist (created 0600
// under the record rules: no symlinks, owner and mode checked, FIFOs and other non-regular files refused
// without blocking) but are opened only for an instant, to learn their inode.
//
// Exclusion: OFD locks exclude other open file descriptions, so other processes and other LockPools
// (of this process too) are kept out by the kernel, which drops every range when the holding process
// exits or is killed (the pool file is opened O_CLOEXEC, so no child keeps it). The goroutines of one
// pool share its file description, which the kernel does not tell apart, so the pool keeps its own table
// of held names under a mutex.
//
// Interoperation: a pool lock and a Store.TryLock (flock) of the same name do not exclude each other;
// every process sharing a directory must use the same kind for a given name. A LockPool is safe for
// concurrent use.
type LockPool struct {
	s    *Store
	f    *os.File // the pool file; closing it drops every range
	self lockKey  // the pool file's identity, rechecked so a replaced pool file is noticed

	mu     sync.Mutex
	kmu    sync.Mutex // serialises the kernel lock calls (see TryLock); never held with mu
	closed bool
	held   map[string]*Lock  // name -> held lock
	byKey  map[lockKey]*Lock // range -> held lock (a range the pool holds is never locked again through it)

	kernelHook func(cmd int, typ int16) // tests: called right before each lock or unlock call to the kernel; nil in production
}

// OpenLockPool opens (creating 0600 when absent) the store's pool file. It holds one descriptor until
// Close (or until the pool is unreachable and collected, which also means no lock of it is referenced).
func (s *Store) OpenLockPool() (*LockPool, error) {
	dirfd, err := s.openDir()
	if err != nil {
		return nil, err
	}
	defer unix.Close(dirfd)
	fd, err := s.openLockAt(dirfd, poolFileName, true)
	if err != nil {
		return nil, err
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		_ = unix.Close(fd)
		return nil, errors.Wrap(err, "safefile: stat lock pool")
	}
	return &LockPool{s: s, f: os.NewFile(uintptr(fd), s.path(poolFileName)), self: lockKey{st.Dev, st.Ino},
		held: make(map[string]*Lock), byKey: make(map[lockKey]*Lock)}, nil
}

// Close drops every lock of the pool (Held turns false) and closes its file.
func (p *LockPool) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil
	}
	p.closed = true
	clear(p.held)
	clear(p.byKey)
	return p.f.Close()
}

// resolve opens "<name>.lock" for an instant (creating it when create is set) and returns its identity,
// after checking that the pool file in the directory is still this pool's.
func (p *LockPool) resolve(name string, create bool) (lockKey, error) {
	if err := validName(name); err != nil {
		return lockKey{}, err
	}
	dirfd, err := p.s.openDir()
	if err != nil {
		return lockKey{}, err
	}
	defer unix.Close(dirfd)
	fd, err := p.s.openLockAt(dirfd, name+lockSuffix, create)
	if err != nil {
		return lockKey{}, err
	}
	var st unix.Stat_t
	err = unix.Fstat(fd, &st)
	_ = unix.Close(fd)
	if err != nil {
		return lockKey{}, errors.Wrapf(err, "safefile: stat lock %s", name)
	}
	k := lockKey{st.Dev, st.Ino}
	if k.dev != p.self.dev || k.ino > math.MaxInt64 {
		return lockKey{}, errors.WithStack(&UnsafePathError{Path: p.s.path(name + lockSuffix), Reason: "lock_file_system"})
	}
	if err := p.checkSelf(dirfd); err != nil {
		return lockKey{}, err
	}
	return k, nil
}

// Check reports whether the pool can still be used: not closed, and its file still the one in the
// directory (ErrLockPoolReplaced otherwise).
func (p *LockPool) Check() error {
	p.mu.Lock()
	closed := p.closed
	p.mu.Unlock()
	if closed {
		return errors.New("safefile: lock pool closed")
	}
	return p.checkPool()
}

// checkPool is checkSelf on a fresh walk of the directory.
func (p *LockPool) checkPool() error {
	dirfd, err := p.s.openDir()
	if err != nil {
		return err
	}
	defer unix.Close(dirfd)
	return p.checkSelf(dirfd)
}

// checkSelf: the pool file in the directory is still the one this pool holds open.
func (p *LockPool) checkSelf(dirfd int) error {
	var st unix.Stat_t
	if err := unix.Fstatat(dirfd, poolFileName, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil ||
		(lockKey{st.Dev, st.Ino}) != p.self {
		return errors.WithStack(&UnsafePathError{Path: p.s.path(poolFileName), Reason: reasonPoolReplaced})
	}
	return nil
}

// fcntl runs one OFD lock command on key's byte, retrying EINTR. The lock and unlock calls run one at a
// time (kmu): the kernel walks the pool file's list of ranges under a spinlock, so concurrent calls would
// spin on the CPUs the rest of the process (and the master beside it) needs, instead of waiting parked.
func (p *LockPool) fcntl(cmd int, lk *unix.Flock_t) error {
	if cmd == unix.F_OFD_SETLK {
		p.kmu.Lock()
		defer p.kmu.Unlock()
	}
	if p.kernelHook != nil {
		p.kernelHook(cmd, lk.Type)
	}
	rc, err := p.f.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) {
		for {
			ferr = unix.FcntlFlock(fd, cmd, lk)
			if ferr != unix.EINTR {
				return
			}
		}
	}); err != nil {
		return err
	}
	return ferr
}

func byteOf(k lockKey, typ int16) unix.Flock_t {
	return unix.Flock_t{Type: typ, Whence: 0, Start: int64(k.ino), Len: 1}
}

// TryLock takes lock name without waiting: ErrLocked when any holder (another goroutine through this
// pool, another pool, another process) has it.
//
// The kernel call runs outside the pool's table mutex: with thousands of ranges on the pool file the
// kernel walks its list of them on every lock and unlock, and a goroutine holding the table through that
// call (and through the wait for a CPU after it) would make every Held, IsLocked and Check of the process
// (a Status, a lease check) wait behind it. The lock and unlock calls still run one at a time (fcntl).
// The name is reserved in the pool's table first (poolTaking), so a concurrent TryLock of the same name
// through this pool is ErrLocked, as before.
func (p *LockPool) TryLock(name string) (*Lock, error) {
	k, err := p.resolve(name, true)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, errors.Newf("safefile: lock %s: pool closed", name)
	}
	if p.held[name] != nil || p.byKey[k] != nil {
		p.mu.Unlock()
		return nil, errors.Wrapf(ErrLocked, "%s", name)
	}
	l := &Lock{fd: -1, name: name, pool: p, key: k, pstate: poolTaking}
	p.held[name], p.byKey[k] = l, l
	p.mu.Unlock()
	lk := byteOf(k, unix.F_WRLCK)
	ferr := p.fcntl(unix.F_OFD_SETLK, &lk)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		// Close ran meanwhile: closing the pool file drops every range, this one too.
		return nil, errors.Newf("safefile: lock %s: pool closed", name)
	}
	if ferr != nil {
		if p.held[name] == l {
			delete(p.held, name)
			delete(p.byKey, k)
		}
		if ferr == unix.EAGAIN || ferr == unix.EACCES {
			return nil, errors.Wrapf(ErrLocked, "%s", name)
		}
		return nil, errors.Wrapf(ferr, "safefile: lock %s", name)
	}
	l.pstate = poolHeld
	return l, nil
}

// LockWait polls TryLock until it succeeds, ctx ends, or maxWait has passed (then ErrLocked). maxWait
// <= 0 means a single attempt.
func (p *LockPool) LockWait(ctx context.Context, name string, maxWait time.Duration) (*Lock, error) {
	return lockWait(ctx, name, maxWait, p.TryLock)
}

// IsLocked reports whether anyone holds lock name right now, without taking it (F_OFD_GETLK), so it
// never makes a racing TryLock fail. A missing lock file means not locked.
func (p *LockPool) IsLocked(name string) (bool, error) {
	if err := validName(name); err != nil {
		return false, err
	}
	p.mu.Lock()
	mine := !p.closed && p.held[name] != nil
	p.mu.Unlock()
	if mine {
		// Held through this pool: only the pool file's identity is checked (one fstatat, no lock file
		// walk), since a replaced pool no longer excludes anybody.
		if err := p.checkPool(); err != nil {
			return false, err
		}
		return true, nil
	}
	k, err := p.resolve(name, false)
	if err != nil {
		if errors.Is(err, ErrNotExist) {
			return false, nil
		}
		return false, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false, errors.Newf("safefile: probe lock %s: pool closed", name)
	}
	if p.held[name] != nil || p.byKey[k] != nil {
		return true, nil // held through this pool: the kernel reports no conflict with our own range
	}
	lk := byteOf(k, unix.F_WRLCK)
	if err := p.fcntl(unix.F_OFD_GETLK, &lk); err != nil {
		return false, errors.Wrapf(err, "safefile: probe lock %s", name)
	}
	return lk.Type != unix.F_UNLCK, nil
}

// release drops l's range (a no-op when it is no longer held). The name stays in the pool's table
// (poolReleasing) until the kernel has dropped the range: a TryLock of the same name through this pool
// before that would take a range the unlock then removes.
func (p *LockPool) release(l *Lock) error {
	p.mu.Lock()
	if p.closed || p.held[l.name] != l || l.pstate != poolHeld {
		p.mu.Unlock()
		return nil
	}
	l.pstate = poolReleasing
	p.mu.Unlock()
	lk := byteOf(l.key, unix.F_UNLCK)
	err := p.fcntl(unix.F_OFD_SETLK, &lk)
	p.mu.Lock()
	if p.held[l.name] == l {
		delete(p.held, l.name)
		delete(p.byKey, l.key)
	}
	p.mu.Unlock()
	if err != nil {
		return errors.Wrapf(err, "safefile: release lock %s", l.name)
	}
	return nil
}

// stillHeld: l is held through the pool, and its lock file and the pool file are still the ones in the
// directory.
func (p *LockPool) stillHeld(l *Lock) bool {
	p.mu.Lock()
	held := !p.closed && p.held[l.name] == l && l.pstate == poolHeld
	p.mu.Unlock()
	if !held {
		return false
	}
	k, err := p.resolve(l.name, false)
	return err == nil && k == l.key
}
