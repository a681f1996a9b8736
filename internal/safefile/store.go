package safefile

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/errors"
	"golang.org/x/sys/unix"
)

// DefaultMaxRecordSize bounds what Read accepts (a receipt is < 1 KiB).
const DefaultMaxRecordSize = 1 << 20

// Store is a directory of small records kept under the durable file
// discipline described in the package documentation. It holds no open file
// descriptors (a LockPool of it holds one): every call resolves the path again
// (one openat2(2) refusing symlinks, or a walk of its components), so a path
// component swapped for a symlink after OpenStore is still refused.
// A Store is safe for concurrent use by goroutines and by other processes
// using the same rules.
type Store struct {
	dir     string
	owner   int
	maxSize int64
	hook    func(stage string) // test hook: crash points; nil in production
	dsync   *dirSyncer         // group commit of this directory's fsyncs
	group   *SyncGroup         // group commit of the fsyncs of the stores sharing it; nil: none
	resolve *dirResolver       // how the directory is opened; shared with the stores Sub opens
}

// StoreOption configures OpenStore.
type StoreOption func(*storeConfig)

type storeConfig struct {
	create  bool
	owner   int
	maxSize int64
	hook    func(string)
	group   *SyncGroup
	resolve *dirResolver // nil: a new one
	// lazy: a directory this open creates is not fsynced into its parent (Store.Sub reports it, and the
	// caller syncs the parent, concurrently with its other durability work).
	lazy bool
}

// WithCreate makes OpenStore create the directory with mode 0700 (and missing
// parents with mode 0755) when it does not exist, owned by the expected owner.
func WithCreate() StoreOption { return func(c *storeConfig) { c.create = true } }

// WithOwner sets the uid that must own the directory and every file
// (default os.Geteuid()). When the process runs as another uid (root), files
// it creates are chowned to this uid.
func WithOwner(uid int) StoreOption { return func(c *storeConfig) { c.owner = uid } }

// WithStageHook installs a test hook called at named points of the write
// paths (crash tests park or kill a process there). Production code never
// sets it.
func WithStageHook(h func(stage string)) StoreOption { return func(c *storeConfig) { c.hook = h } }

// WithMaxRecordSize bounds the size of a record Read accepts (default
// DefaultMaxRecordSize); a larger record is ErrCorrupt.
func WithMaxRecordSize(n int64) StoreOption { return func(c *storeConfig) { c.maxSize = n } }

// OpenStore checks (and with WithCreate creates) the store directory: no
// symlink in any path component, a directory owned by the expected uid with
// mode exactly 0700. Relative paths are made absolute first.
func OpenStore(dir string, opts ...StoreOption) (*Store, error) {
	cfg := storeConfig{owner: os.Geteuid(), maxSize: DefaultMaxRecordSize}
	for _, o := range opts {
		o(&cfg)
	}
	if dir == "" {
		return nil, errors.Wrap(ErrInvalidName, "empty store directory")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, errors.Wrap(err, "safefile: resolve directory")
	}
	s, _, err := openStore(abs, cfg)
	return s, err
}

// openStore is OpenStore on an absolute path; created reports that this call made the store directory.
func openStore(abs string, cfg storeConfig) (*Store, bool, error) {
	s := &Store{dir: abs, owner: cfg.owner, maxSize: cfg.maxSize, hook: cfg.hook, dsync: &dirSyncer{}, group: cfg.group,
		resolve: cfg.resolve}
	if s.resolve == nil {
		s.resolve = &dirResolver{}
	}
	fd, _, created, err := s.walkStat(cfg.create, cfg.lazy)
	if err != nil {
		return nil, false, err
	}
	defer unix.Close(fd)
	if s.group != nil {
		if err := s.group.bind(fd); err != nil {
			return nil, false, err
		}
	}
	return s, created, nil
}

// Dir returns the absolute, cleaned store directory.
func (s *Store) Dir() string { return s.dir }

func (s *Store) at(stage string) {
	if s.hook != nil {
		s.hook(stage)
	}
}

func (s *Store) path(name string) string { return s.dir + "/" + name }

// openDir returns a read-only descriptor of the checked store directory.
func (s *Store) openDir() (int, error) { return s.walk(false) }

// walk opens every component from / with O_NOFOLLOW, so a symlink anywhere is
// refused, optionally creating missing components, then checks the final
// directory's owner and mode.
func (s *Store) walk(create bool) (int, error) {
	fd, _, _, err := s.walkStat(create, false)
	return fd, err
}

// walkStat is walk returning the directory's stat too (its device and inode key the group commit of
// directory fsyncs) and whether it created the final directory; with lazy, a created final directory is
// not fsynced into its parent (the caller does, see Store.Sub).
func (s *Store) walkStat(create, lazy bool) (int, unix.Stat_t, bool, error) {
	if fd, ok := s.resolve.open(s.dir); ok {
		st, err := s.checkDir(fd)
		if err != nil {
			_ = unix.Close(fd)
			return -1, st, false, err
		}
		return fd, st, false, nil
	}
	s.at(stageDirWalk)
	var st unix.Stat_t
	fd, err := unix.Open("/", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, st, false, errors.Wrap(err, "safefile: open /")
	}
	// The components are substrings of s.dir (absolute and clean), and cur, the path so far, is its
	// prefix: the walk builds no strings.
	ncomps := strings.Count(s.dir, "/")
	if s.dir == "/" {
		ncomps = 0
	}
	made := false
	for i, start := 0, 1; i < ncomps; i++ {
		end := strings.IndexByte(s.dir[start:], '/')
		if end < 0 {
			end = len(s.dir)
		} else {
			end += start
		}
		c, cur := s.dir[start:end], s.dir[:end]
		start = end + 1
		last := i == ncomps-1
		flags := unix.O_PATH | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC
		if last {
			flags = unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC
		}
		created := false
		nfd, err := unix.Openat(fd, c, flags, 0)
		if err == unix.ENOENT && create {
			mode := uint32(0o755)
			if last {
				mode = 0o700
			}
			if merr := unix.Mkdirat(fd, c, mode); merr != nil && merr != unix.EEXIST {
				_ = unix.Close(fd)
				return -1, st, false, errors.Wrapf(merr, "safefile: create %s", cur)
			}
			created = true
			if !last || !lazy {
				syncDirAt(fd)
			}
			nfd, err = unix.Openat(fd, c, flags, 0)
		}
		if err != nil {
			err = s.classifyOpenErr(fd, c, cur, err, true)
			_ = unix.Close(fd)
			return -1, st, false, err
		}
		_ = unix.Close(fd)
		fd = nfd
		if last && created {
			made = true
			if err := s.fixCreated(fd, 0o700); err != nil {
				_ = unix.Close(fd)
				return -1, st, false, errors.Wrapf(err, "safefile: prepare %s", cur)
			}
		}
	}
	if ncomps == 0 { // the store is "/" itself: reopen readable for the checks
		nfd, err := unix.Open("/", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		_ = unix.Close(fd)
		if err != nil {
			return -1, st, false, errors.Wrap(err, "safefile: open /")
		}
		fd = nfd
	}
	st, err = s.checkDir(fd)
	if err != nil {
		_ = unix.Close(fd)
		return -1, st, false, err
	}
	return fd, st, made, nil
}

// checkDir checks the opened store directory: a directory, owned by the expected owner, mode 0700.
func (s *Store) checkDir(fd int) (unix.Stat_t, error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return st, errors.Wrap(err, "safefile: stat directory")
	}
	reason, detail := "", ""
	switch {
	case st.Mode&unix.S_IFMT != unix.S_IFDIR:
		reason = "not_directory"
	case int(st.Uid) != s.owner:
		reason, detail = "foreign_owner", fmt.Sprintf("owner uid %d, want %d", st.Uid, s.owner)
	case st.Mode&0o7777 != 0o700:
		reason, detail = "permissions", fmt.Sprintf("mode %#o, want 0700", st.Mode&0o7777)
	}
	if reason != "" {
		return st, errors.WithStack(&UnsafePathError{Path: s.dir, Reason: reason, Detail: detail})
	}
	return st, nil
}

// stageDirWalk is the stage hook's name for a directory opened by the component walk rather than by
// one openat2 (tests check which way a store resolves its directory).
const stageDirWalk = "dir-walk"

// dirResolver opens a store directory with one openat2(2) that refuses a symlink in any component
// (RESOLVE_NO_SYMLINKS): the kernel's own form of the walk, one system call instead of one open per
// component (profiled: the walks were a third of the dispatcher's CPU on tmpfs at 10,000 requests in
// flight). Any failure falls back to the walk, which creates what is missing and tells a symlink from
// a missing or foreign component; a kernel without openat2 (before 5.6), or a seccomp filter refusing
// it, turns the fast path off for good.
type dirResolver struct {
	off atomic.Bool
	// openat2 is unix.Openat2 when nil; tests put a refusing one here (a kernel or filter without it).
	openat2 func(dirfd int, path string, how *unix.OpenHow) (int, error)
}

// open returns a read-only descriptor of dir, or false when the caller must walk.
func (r *dirResolver) open(dir string) (int, bool) {
	if r.off.Load() {
		return -1, false
	}
	how := unix.OpenHow{Flags: unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS}
	for {
		sys := r.openat2
		if sys == nil {
			sys = unix.Openat2
		}
		fd, err := sys(unix.AT_FDCWD, dir, &how)
		switch err {
		case nil:
			return fd, true
		case unix.EINTR:
			continue
		case unix.ENOSYS, unix.EPERM, unix.E2BIG:
			r.off.Store(true)
		}
		return -1, false
	}
}

// fixCreated gives a file or directory we just created its exact mode and,
// when we are not the expected owner, the expected owner.
func (s *Store) fixCreated(fd int, mode uint32) error {
	if err := unix.Fchmod(fd, mode); err != nil {
		return err
	}
	if os.Geteuid() != s.owner {
		if err := unix.Fchown(fd, s.owner, -1); err != nil {
			return err
		}
	}
	return nil
}

// classifyOpenErr turns an openat error on name (inside dirfd) into the
// package's errors, telling symlinks from other failures.
func (s *Store) classifyOpenErr(dirfd int, name, path string, err error, wantDir bool) error {
	switch err {
	case unix.ENOENT:
		return errors.Wrapf(ErrNotExist, "%s", path)
	case unix.ELOOP, unix.ENOTDIR, unix.ENXIO, unix.EMLINK, unix.EISDIR, unix.EOPNOTSUPP:
		var st unix.Stat_t
		if serr := unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); serr == nil {
			switch {
			case st.Mode&unix.S_IFMT == unix.S_IFLNK:
				return errors.WithStack(&UnsafePathError{Path: path, Reason: "symlink"})
			case wantDir && st.Mode&unix.S_IFMT != unix.S_IFDIR:
				return errors.WithStack(&UnsafePathError{Path: path, Reason: "not_directory"})
			case !wantDir && st.Mode&unix.S_IFMT != unix.S_IFREG:
				return errors.WithStack(&UnsafePathError{Path: path, Reason: "not_regular"})
			}
		}
	}
	return errors.Wrapf(err, "safefile: open %s", path)
}

// checkFile applies the file rules to the stat result of record (or lock file) name.
func (s *Store) checkFile(st *unix.Stat_t, name string) error {
	reason, detail := "", ""
	switch {
	case st.Mode&unix.S_IFMT == unix.S_IFLNK:
		reason = "symlink"
	case st.Mode&unix.S_IFMT != unix.S_IFREG:
		reason = "not_regular"
	case int(st.Uid) != s.owner:
		reason, detail = "foreign_owner", fmt.Sprintf("owner uid %d, want %d", st.Uid, s.owner)
	case st.Mode&0o077 != 0:
		reason, detail = "permissions", fmt.Sprintf("mode %#o, want 0600", st.Mode&0o7777)
	case st.Nlink > 1:
		reason = "multiple_links"
	}
	if reason != "" {
		return errors.WithStack(&UnsafePathError{Path: s.path(name), Reason: reason, Detail: detail})
	}
	return nil
}

// statName checks an existing name without following it; ErrNotExist if absent.
func (s *Store) statName(dirfd int, name string) error {
	var st unix.Stat_t
	err := unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW)
	if err == unix.ENOENT || (err == nil && st.Nlink == 0) {
		return errors.Wrapf(ErrNotExist, "%s", s.path(name))
	}
	if err != nil {
		return errors.Wrapf(err, "safefile: stat %s", s.path(name))
	}
	return s.checkFile(&st, name)
}

// openFile opens name in dirfd without following symlinks and checks it.
// The open is O_NONBLOCK so that a FIFO (whose open would wait for a writer)
// or a device returns at once; fstat then refuses anything that is not a
// regular file (ErrNotRegular). On a regular file O_NONBLOCK changes nothing,
// so the flag is left set.
// A link count of 0 means the name was replaced (renamed over) or removed
// between the lookup and the fstat: the open is retried so the caller sees
// the current file, never a spurious error.
func (s *Store) openFile(dirfd int, name string, flags int, mode uint32) (int, error) {
	fd, _, err := s.openFileStat(dirfd, name, flags, mode)
	return fd, err
}

// openFileStat is openFile also returning the checked file's stat (Read bounds its size with it).
func (s *Store) openFileStat(dirfd int, name string, flags int, mode uint32) (int, unix.Stat_t, error) {
	for attempt := 0; ; attempt++ {
		var st unix.Stat_t
		fd, err := unix.Openat(dirfd, name, flags|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, mode)
		if err != nil {
			return -1, st, s.classifyOpenErr(dirfd, name, s.path(name), err, false)
		}
		if err := unix.Fstat(fd, &st); err != nil {
			_ = unix.Close(fd)
			return -1, st, errors.Wrapf(err, "safefile: stat %s", s.path(name))
		}
		if st.Nlink == 0 && st.Mode&unix.S_IFMT == unix.S_IFREG {
			_ = unix.Close(fd)
			if attempt < 500 {
				if attempt >= 10 {
					// A writer replacing the file in a tight loop on a loaded host: give it the CPU
					// rather than spin; 500 attempts span about half a second.
					time.Sleep(time.Millisecond)
				}
				continue
			}
			return -1, st, errors.Newf("safefile: %s keeps being replaced", errors.Safe(s.path(name)))
		}
		if err := s.checkFile(&st, name); err != nil {
			_ = unix.Close(fd)
			return -1, st, err
		}
		return fd, st, nil
	}
}

func syncDirAt(dirfd int) {
	// dirfd may be an O_PATH descriptor; reopen it readable to fsync.
	fd, err := unix.Openat(dirfd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return
	}
	_ = unix.Fsync(fd)
	_ = unix.Close(fd)
}

// validName accepts plain names: 1..200 bytes of [A-Za-z0-9._-], not
// starting with '.' (reserved for temporary files) and not ending in ".lock"
// (reserved for lock files).
func validName(name string) error {
	if !isValidName(name) {
		return errors.WithStack(ErrInvalidName)
	}
	return nil
}

// isValidName is validName's check without building an error: hot paths (List over a directory full of
// lock files) filter names with it at no allocation.
func isValidName(name string) bool {
	if len(name) == 0 || len(name) > 200 || name[0] == '.' || strings.HasSuffix(name, lockSuffix) {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}
