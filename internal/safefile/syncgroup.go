package safefile

import (
	"fmt"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/errors"
	"golang.org/x/sys/unix"
)

// SyncGroup group-commits the fsyncs of the stores that share it, across files and directories, as a
// database's commit log does. While few callers sync (at most three at once, and no shared sync ended in
// the last 5 ms), each fsyncs its own descriptor, exactly as without a group. Beyond that, callers queue: at most one shared sync runs at a
// time, the callers that arrive meanwhile queue, and the next one serves all of them at once: one
// syncfs(2) of their file system, which writes every dirty inode, data and directory of it and then
// commits the journal once (without a journal, flushes the device once): what all their fsyncs would have
// made durable, for the price of one. (A shared sync that finds a single caller is that caller's fsync.)
// A syncfs writes every dirty page of the file system, another program's too: when one takes 100 ms or
// more, every caller fsyncs its own for the next 10 s.
//
// Why: concurrent writers' fsyncs, each waiting for its own journal commit, cost a commit per fsync the
// moment they arrive staggered (measured on a journaled ext4: 100 concurrent claim creates made 0.6
// journal commits each, and the journal's commits bounded their rate); one syncfs per queue makes one.
//
// A file system reports a writeback error once per open file description (errseq): syncfs reports the
// errors of the whole file system since the descriptor it is called on was opened. The group keeps a
// descriptor opened when its first store opened, before any write through it, so no error of a write made
// through the group can predate it. An error reported to it fails that sync's callers and every later
// sync of the group (failed): a writer that queued behind a failed sync may have written before the error
// and can no longer learn of it, and the kernel may have dropped the pages it failed to write (PostgreSQL
// stopped retrying fsync for the same reason). A group that failed stays failed; reopening the store makes
// a new one. A caller whose descriptor is on another file system (a mount swapped in under the store)
// fsyncs its own.
//
// The zero value is not usable: NewSyncGroup. Safe for concurrent use.
type SyncGroup struct {
	once  sync.Once
	fs    *os.File // opened by the first store that joined: syncfs reports through it
	dev   uint64   // its file system
	fsErr error    // binding it failed
	// shared: syncs of several callers are one syncfs (a kernel whose syncfs reports writeback errors);
	// otherwise every caller fsyncs its own.
	shared bool
	syncfs func(fd int) error // unix.Syncfs; tests make it fail

	mu      sync.Mutex
	running bool // a shared sync runs (its leader will hand over to the queue's first caller)
	// ownInFlight callers fsync their own descriptors, concurrently, while fewer than maxOwn do and no
	// shared sync runs or waits: a caller more queues for a shared one.
	ownInFlight, maxOwn int
	// lastShared: when the last shared sync ended. Within busyFor of it every caller queues: a group
	// under load keeps committing together instead of falling back to one fsync (one journal commit)
	// per caller in the gaps between its shared syncs.
	lastShared time.Time
	busyFor    time.Duration
	// ownUntil: a syncfs took slowSync or longer (it writes every dirty page of the file system, also
	// another program's: a file system that one of them fills); until then every caller fsyncs its own.
	ownUntil time.Time
	slowSync time.Duration
	queue    []*syncWait // arrived while one runs: the next sync's callers
	failed   error       // a file-system sync failed: every later sync fails with it

	fileSystemSyncs atomic.Int64 // syncs of several callers (one syncfs each)
	ownSyncs        atomic.Int64 // syncs of one caller (its own fsync)
}

// syncWait is one caller of SyncGroup.sync.
type syncWait struct {
	fd   int
	err  error
	lead bool          // woken to run the next sync, not with a result
	done chan struct{} // closed once: with a result, or to hand over the lead
}

// NewSyncGroup returns a group for the stores opened with WithSyncGroup; they must share a file system
// (a caller on another one fsyncs its own).
func NewSyncGroup() *SyncGroup {
	return &SyncGroup{shared: syncfsReportsErrors(), syncfs: unix.Syncfs, maxOwn: defaultMaxOwnSyncs,
		busyFor: defaultBusyFor, slowSync: defaultSlowSync}
}

// defaultSlowSync and slowSyncPause: a syncfs that takes 100 ms (a hundred fsyncs of a claim, or the
// dirty data of another writer on the file system) stops the sharing for 10 s: an fsync waits only for
// its own file's data, a syncfs for everyone's.
const (
	defaultSlowSync = 100 * time.Millisecond
	slowSyncPause   = 10 * time.Second
)

// defaultBusyFor: callers keep queueing for this long after a shared sync ended (a few fsync times: under
// load the next one is due by then).
const defaultBusyFor = 5 * time.Millisecond

// defaultMaxOwnSyncs: up to this many callers fsync their own descriptors at once before the next one
// queues for a shared sync. A Create makes up to three concurrent fsyncs (its temporary file and two
// index directories), so one writer alone never waits for a shared sync.
const defaultMaxOwnSyncs = 3

// syncfsReportsErrors: Linux reports writeback errors through syncfs since 5.8; before, syncfs returned 0
// whatever failed, so a group on an older kernel (or one whose release cannot be read) does not share.
func syncfsReportsErrors() bool {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return false
	}
	return kernelAtLeast(unix.ByteSliceToString(u.Release[:]), 5, 8)
}

// kernelAtLeast parses the major.minor prefix of a kernel release ("6.18.44-fc-v1300").
func kernelAtLeast(release string, major, minor int) bool {
	var ma, mi int
	if n, _ := fmt.Sscanf(release, "%d.%d", &ma, &mi); n != 2 {
		return false
	}
	return ma > major || (ma == major && mi >= minor)
}

// WithSyncGroup makes the store (and its Sub stores) sync through g: see SyncGroup.
func WithSyncGroup(g *SyncGroup) StoreOption { return func(c *storeConfig) { c.group = g } }

// bind opens the group's reporting descriptor on the checked store directory dirfd, once.
func (g *SyncGroup) bind(dirfd int) error {
	g.once.Do(func() {
		fd, err := unix.FcntlInt(uintptr(dirfd), unix.F_DUPFD_CLOEXEC, 0)
		if err != nil {
			g.fsErr = errors.Wrap(err, "safefile: sync group descriptor")
			return
		}
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			_ = unix.Close(fd)
			g.fsErr = errors.Wrap(err, "safefile: sync group descriptor")
			return
		}
		// An *os.File, so the descriptor is closed when the group is no longer reachable.
		g.fs, g.dev = os.NewFile(uintptr(fd), "sync group"), uint64(st.Dev)
	})
	return g.fsErr
}

// Stats reports how many syncs served several callers (one syncfs each) and how many one (its fsync).
func (g *SyncGroup) Stats() (fileSystemSyncs, ownSyncs int64) {
	return g.fileSystemSyncs.Load(), g.ownSyncs.Load()
}

// fsync makes what fd's fsync would make durable durable, through s's group when it has one.
func (s *Store) fsync(fd int) error {
	if s.group == nil {
		return unix.Fsync(fd)
	}
	return s.group.sync(fd, s.at)
}

// sync returns once a sync that started after the call covered fd: its own fsync, or a syncfs shared
// with the callers queued with it.
// at is the caller's stage hook: "own-sync" when it fsyncs its own without queueing, "sync-queued" when it
// waits behind a running sync, "lone-sync" when it runs one that found only itself, "fs-sync" when it
// runs one for several callers.
func (g *SyncGroup) sync(fd int, at func(string)) error {
	if !g.shared || g.fs == nil {
		return unix.Fsync(fd)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return err
	}
	if uint64(st.Dev) != g.dev {
		return unix.Fsync(fd)
	}
	g.mu.Lock()
	if err := g.failed; err != nil {
		g.mu.Unlock()
		return err
	}
	now := time.Now()
	few := !g.running && len(g.queue) == 0 && g.ownInFlight < g.maxOwn && now.Sub(g.lastShared) >= g.busyFor
	if few || now.Before(g.ownUntil) {
		// Few writers: each fsyncs its own, concurrently, as without a group (a lone Create's three
		// fsyncs stay one wait, not a sync and then a shared one). Or the file system's syncs are slow
		// (someone else's dirty data): every writer fsyncs its own for a while.
		g.ownInFlight++
		g.mu.Unlock()
		g.ownSyncs.Add(1)
		at("own-sync")
		err := unix.Fsync(fd)
		g.mu.Lock()
		g.ownInFlight--
		g.mu.Unlock()
		return err
	}
	w := &syncWait{fd: fd, done: make(chan struct{})} // only a queued caller needs one
	g.queue = append(g.queue, w)
	if g.running {
		g.mu.Unlock()
		at("sync-queued")
		<-w.done
		if !w.lead {
			return w.err
		}
		g.mu.Lock()
	}
	g.running = true
	batch := g.queue
	g.queue = nil
	failed := g.failed
	g.mu.Unlock()

	err := failed
	if err == nil {
		err = g.round(batch, at)
	}

	g.mu.Lock()
	if err != nil && len(batch) > 1 && g.failed == nil {
		g.failed = err
	}
	for _, m := range batch {
		if m != w {
			m.err = err
			close(m.done)
		}
	}
	g.lastShared = time.Now()
	if len(g.queue) > 0 {
		next := g.queue[0]
		next.lead = true
		close(next.done)
	} else {
		g.running = false
	}
	g.mu.Unlock()
	return err
}

// round syncs batch: one caller's own fsync, or the file system once for several.
func (g *SyncGroup) round(batch []*syncWait, at func(string)) error {
	if len(batch) == 1 {
		g.ownSyncs.Add(1)
		at("lone-sync")
		return unix.Fsync(batch[0].fd)
	}
	g.fileSystemSyncs.Add(1)
	at("fs-sync")
	t0 := time.Now()
	err := g.syncfs(int(g.fs.Fd()))
	runtime.KeepAlive(g.fs)
	if took := time.Since(t0); took >= g.slowSync {
		g.mu.Lock()
		g.ownUntil = time.Now().Add(slowSyncPause)
		g.mu.Unlock()
	}
	if err != nil {
		return errors.Wrap(err, "safefile: syncfs")
	}
	return nil
}
