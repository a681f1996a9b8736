package safefile

import (
	"os"
	"sync"

	"github.com/cockroachdb/errors"
	"golang.org/x/sys/unix"
)

// The calls in this file let a caller make several names durable with as few sequential fsyncs as their
// order allows: a directory fsync is shared by the concurrent writers of one directory (group commit), a
// record can be made visible only after other durability work that runs concurrently with its own data
// fsync (CreateExclusiveAfter), an empty record is created directly (CreateEmpty) and a new sub-directory
// leaves the fsync of its parent to the caller (Sub).

// syncRound is one directory fsync that several callers wait for.
type syncRound struct {
	done     chan struct{}
	err      error
	dev, ino uint64
}

// dirSyncer group-commits the fsyncs of one store directory: at most one runs at a time; callers that
// arrive while one runs queue for the next one and all of them share it. A caller never joins a round that
// has already started (its own rename or create might not be covered), only one that has not.
type dirSyncer struct {
	mu      sync.Mutex
	running *syncRound // started, not finished
	next    *syncRound // queued behind running, not started: joined by every caller arriving meanwhile
}

// syncDir fsyncs the directory dirfd (whose stat is st) once every name change this caller made in it is
// covered: by an fsync that starts after the call. Rounds are keyed by device and inode, so a caller whose
// directory is not the queued round's (the path was swapped under a concurrent caller) fsyncs its own.
func (s *Store) syncDir(dirfd int, st *unix.Stat_t) error {
	d, dev, ino := s.dsync, uint64(st.Dev), uint64(st.Ino)
	d.mu.Lock()
	if r := d.next; r != nil {
		d.mu.Unlock()
		if r.dev != dev || r.ino != ino {
			s.at("dir-fsync")
			return s.fsyncDirErr(s.fsync(dirfd))
		}
		s.at("dir-sync-queued")
		<-r.done
		return r.err
	}
	r := &syncRound{done: make(chan struct{}), dev: dev, ino: ino}
	prev := d.running
	if prev == nil {
		d.running = r
	} else {
		d.next = r
	}
	d.mu.Unlock()
	if prev != nil {
		s.at("dir-sync-queued")
		<-prev.done
		d.mu.Lock()
		d.running, d.next = r, nil
		d.mu.Unlock()
	}
	s.at("dir-fsync")
	r.err = s.fsyncDirErr(s.fsync(dirfd))
	d.mu.Lock()
	d.running = nil
	d.mu.Unlock()
	close(r.done)
	return r.err
}

func (s *Store) fsyncDirErr(err error) error {
	if err != nil {
		return errors.Wrapf(err, "safefile: fsync %s", s.dir)
	}
	return nil
}

// SyncDir makes every name created, replaced or removed in the store directory before the call durable
// (an fsync of the directory). Concurrent calls share fsyncs: each returns after one that started after
// it was called.
func (s *Store) SyncDir() error {
	fd, st, _, err := s.walkStat(false, false)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	return s.syncDir(fd, &st)
}

// Sub opens the store directory name inside s, with s's owner, record size bound and test hook. With
// create, a missing directory is made (mode 0700) and created reports it: its entry in s is durable only
// once s.SyncDir returns, which the caller runs (typically concurrently with its other durability work).
// A directory found missing without create is ErrNotExist. The sub store has its own group commit.
func (s *Store) Sub(name string, create bool) (sub *Store, created bool, err error) {
	if err := validName(name); err != nil {
		return nil, false, err
	}
	return openStore(s.path(name), storeConfig{create: create, lazy: true, owner: s.owner, maxSize: s.maxSize,
		hook: s.hook, group: s.group, resolve: s.resolve})
}

// CreateEmpty creates the empty record name directly (O_CREAT|O_EXCL, mode 0600), without a temporary
// file: an empty record has no content a crash could tear, so it needs neither a data fsync nor a rename.
// The new name is durable once the returned sync has returned nil, not before: sync fsyncs the directory
// the record was created in (group-committed like SyncDir) and must be called exactly once (it releases
// the directory descriptor). ErrExist when the name is taken, whatever holds it (Read tells a record from
// an unsafe file); a taken name may not be durable yet either (its creator may not have synced it), so a
// caller that relies on it runs SyncDir.
//
// The create mode is 0600 less the umask, then set to exactly 0600: a crash that loses the chmod leaves a
// mode without group or other bits, which the file rules accept. A store whose files must be given to
// another owner (WithOwner, run as root) creates the record like CreateExclusive instead (durable at once;
// sync does nothing), so that it never shows the wrong owner, not for a moment and not after a crash.
func (s *Store) CreateEmpty(name string) (sync func() error, err error) {
	if os.Geteuid() != s.owner {
		if err := s.CreateExclusive(name, nil); err != nil {
			return nil, err
		}
		return func() error { return nil }, nil
	}
	if err := validName(name); err != nil {
		return nil, err
	}
	dirfd, st, _, err := s.walkStat(false, false)
	if err != nil {
		return nil, err
	}
	fd, err := unix.Openat(dirfd, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, 0o600)
	if err != nil {
		_ = unix.Close(dirfd)
		if err == unix.EEXIST {
			return nil, errors.Wrapf(ErrExist, "%s", s.path(name))
		}
		return nil, errors.Wrapf(err, "safefile: create %s", s.path(name))
	}
	err = unix.Fchmod(fd, 0o600)
	if cerr := unix.Close(fd); err == nil {
		err = cerr
	}
	if err != nil {
		_ = unix.Unlinkat(dirfd, name, 0)
		_ = unix.Close(dirfd)
		return nil, errors.Wrapf(err, "safefile: prepare %s", s.path(name))
	}
	s.at("empty-created")
	return func() error {
		defer unix.Close(dirfd)
		return s.syncDir(dirfd, &st)
	}, nil
}

// Prior is durability work that must be done before a record may appear (CreateExclusiveAfter). It is
// called concurrently with the writing of the record's temporary file and does the work that waits for no
// disk (creating names); it returns the work that does wait (fsyncs), which then runs concurrently with the
// record's own fsync. Both halves run on one goroutine of their own.
type Prior func() (sync func() error, err error)

// CreateExclusiveAfter is CreateExclusive with prior durability work. prior (when not nil) creates its
// names while the record's temporary file is written; once both are done, prior's sync and the record's
// fsync run concurrently, and only when both succeeded is the record renamed into place (RENAME_NOREPLACE)
// and the directory fsynced. So what prior makes durable is durable before the record's name can exist, on
// disk or after any crash, and all of it costs one fsync wait instead of two in a row: the names prior
// created exist before any of the fsyncs begins (with a journal they share its next commit). When prior
// or the record fails, the temporary file is removed and the record never appears; the record's error
// comes first. prior is called exactly once, and its sync, when prior succeeded, exactly once too (also
// when the record cannot be written; its error is then not returned); both have returned when
// CreateExclusiveAfter returns.
func (s *Store) CreateExclusiveAfter(name string, data []byte, prior Prior) error {
	p := startPrior(prior)
	if err := validName(name); err != nil {
		p.abandon()
		return err
	}
	dirfd, st, _, err := s.walkStat(false, false)
	if err != nil {
		p.abandon()
		return err
	}
	defer unix.Close(dirfd)
	tmp, err := s.syncedTemp(dirfd, name, data, p)
	if err != nil {
		return err
	}
	s.at("before-link")
	if err := s.linkExclusive(dirfd, tmp, name); err != nil {
		return err
	}
	s.at("after-link")
	return s.syncDir(dirfd, &st)
}

// syncedTemp writes data into a new temporary file beside name while prior creates its names, then runs
// prior's sync and the file's fsync concurrently (one fsync wait); it returns the temporary file's name
// once both succeeded. On any failure the temporary file is removed and prior has been released.
func (s *Store) syncedTemp(dirfd int, name string, data []byte, p *priorRun) (string, error) {
	tmp, fd, err := s.createTemp(dirfd, name, data)
	if err != nil {
		p.abandon()
		return "", err
	}
	if err := p.staged(); err != nil {
		_ = unix.Close(fd)
		_ = unix.Unlinkat(dirfd, tmp, 0)
		return "", err
	}
	s.at("after-temp-write")
	p.sync()
	err = s.closeSynced(fd, name)
	s.at("temp-synced")
	if perr := p.wait(); err == nil {
		err = perr
	}
	if err != nil {
		_ = unix.Unlinkat(dirfd, tmp, 0)
		return "", err
	}
	return tmp, nil
}

// priorRun runs a Prior on its own goroutine: its names first, then (when told) its sync. A nil *priorRun
// (no prior) does nothing.
type priorRun struct {
	stagedc chan error
	start   chan bool // true: sync for real; false: only to release what prior holds
	synced  chan error
	done    bool // stagedc was read
	err     error
}

func startPrior(prior Prior) *priorRun {
	if prior == nil {
		return nil
	}
	r := &priorRun{stagedc: make(chan error, 1), start: make(chan bool, 1), synced: make(chan error, 1)}
	go func() {
		sync, err := prior()
		r.stagedc <- err
		if err != nil {
			return
		}
		real := <-r.start
		err = sync()
		if !real {
			err = nil
		}
		r.synced <- err
	}()
	return r
}

// staged waits for prior's names; an error is prior's (it then has no sync to run).
func (r *priorRun) staged() error {
	if r == nil {
		return nil
	}
	if !r.done {
		r.err, r.done = <-r.stagedc, true
	}
	return r.err
}

// sync lets prior's sync start (after staged returned nil).
func (r *priorRun) sync() {
	if r != nil {
		r.start <- true
	}
}

// wait returns the result of prior's sync (after sync).
func (r *priorRun) wait() error {
	if r == nil {
		return nil
	}
	return <-r.synced
}

// abandon waits for prior when the record will not be written: its sync runs only to release what it holds.
func (r *priorRun) abandon() {
	if r == nil || r.staged() != nil {
		return
	}
	r.start <- false
	<-r.synced
}

// linkExclusive gives the synced temporary file tmp the name name unless name exists (ErrExist): renameat2
// RENAME_NOREPLACE, or link(2) + unlink on file systems without it. tmp is gone afterwards either way.
func (s *Store) linkExclusive(dirfd int, tmp, name string) error {
	err := unix.Renameat2(dirfd, tmp, dirfd, name, unix.RENAME_NOREPLACE)
	if err == unix.EINVAL || err == unix.ENOSYS {
		// No RENAME_NOREPLACE here: link(2) fails with EEXIST atomically.
		// While both names exist the record has two links, so a concurrent
		// Read may briefly see multiple_links.
		err = unix.Linkat(dirfd, tmp, dirfd, name, 0)
		_ = unix.Unlinkat(dirfd, tmp, 0)
	}
	if err != nil {
		_ = unix.Unlinkat(dirfd, tmp, 0)
		if err == unix.EEXIST {
			return errors.Wrapf(ErrExist, "%s", s.path(name))
		}
		return errors.Wrapf(err, "safefile: create %s", s.path(name))
	}
	return nil
}

// WriteAtomicAfter is WriteAtomic with prior durability work, as CreateExclusiveAfter does it: prior
// creates its names while the record's temporary file is written, its sync runs concurrently with the
// record's fsync, and only when both succeeded is the record renamed over name and the directory
// fsynced. What prior makes durable is durable before the new content can be seen, at the cost of one
// fsync wait, not two in a row.
func (s *Store) WriteAtomicAfter(name string, data []byte, prior Prior) error {
	p := startPrior(prior)
	if err := validName(name); err != nil {
		p.abandon()
		return err
	}
	dirfd, st, _, err := s.walkStat(false, false)
	if err != nil {
		p.abandon()
		return err
	}
	defer unix.Close(dirfd)
	if err := s.statName(dirfd, name); err != nil && !errors.Is(err, ErrNotExist) {
		p.abandon()
		return err
	}
	tmp, err := s.syncedTemp(dirfd, name, data, p)
	if err != nil {
		return err
	}
	s.at("before-rename")
	if err := unix.Renameat(dirfd, tmp, dirfd, name); err != nil {
		_ = unix.Unlinkat(dirfd, tmp, 0)
		return errors.Wrapf(err, "safefile: rename into %s", s.path(name))
	}
	s.at("after-rename")
	return s.syncDir(dirfd, &st)
}

// Discard unlinks record name without fsyncing the directory (nothing when it does not exist): for names
// whose removal may be lost in a crash, which then leaves them as they were. A name that fails the file
// rules is refused, not removed.
func (s *Store) Discard(name string) error {
	if err := validName(name); err != nil {
		return err
	}
	dirfd, _, _, err := s.walkStat(false, false)
	if err != nil {
		return err
	}
	defer unix.Close(dirfd)
	if err := s.statName(dirfd, name); err != nil {
		if errors.Is(err, ErrNotExist) {
			return nil
		}
		return err
	}
	if err := unix.Unlinkat(dirfd, name, 0); err != nil && err != unix.ENOENT {
		return errors.Wrapf(err, "safefile: remove %s", s.path(name))
	}
	return nil
}
