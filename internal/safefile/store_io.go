package safefile

import (
	"crypto/rand"
	"encoding/hex"
	"slices"
	"strings"

	"github.com/cockroachdb/errors"
	"golang.org/x/sys/unix"
)

const tempPrefix = ".tmp-"

// Read returns the content of record name. ErrNotExist when absent;
// *UnsafePathError for a symlink, foreign owner, group/other bits, a
// non-regular file or a file with more than one link; ErrCorrupt when larger
// than the maximum record size or changing while read.
func (s *Store) Read(name string) ([]byte, error) { return s.ReadInto(name, nil) }

// ReadInto is Read reading into buf when it has room for the record and one
// byte more (the read past the end that proves the size did not change),
// into a new buffer otherwise; the content is the returned slice. Hot readers
// pass a reused buffer so that a read allocates nothing.
func (s *Store) ReadInto(name string, buf []byte) ([]byte, error) {
	if err := validName(name); err != nil {
		return nil, err
	}
	dirfd, err := s.openDir()
	if err != nil {
		return nil, err
	}
	defer unix.Close(dirfd)
	fd, st, err := s.openFileStat(dirfd, name, unix.O_RDONLY, 0) // st: the stat that passed the file rules
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	if st.Size > s.maxSize {
		return nil, errors.Wrapf(ErrCorrupt, "%s: larger than %d bytes", s.path(name), s.maxSize)
	}
	if int64(cap(buf)) < st.Size+1 {
		buf = make([]byte, st.Size+1)
	}
	buf = buf[:st.Size+1]
	n := 0
	for n < len(buf) {
		m, err := unix.Read(fd, buf[n:])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, errors.Wrapf(err, "safefile: read %s", s.path(name))
		}
		if m == 0 {
			break
		}
		n += m
	}
	if int64(n) != st.Size {
		return nil, errors.Wrapf(ErrCorrupt, "%s: size changed while reading", s.path(name))
	}
	return buf[:n], nil
}

// WriteAtomic replaces (or creates) record name with data: an O_EXCL
// temporary file (mode 0600) is written and fsynced, renamed over name, and
// the directory is fsynced. An existing name that fails the file rules is not
// replaced (*UnsafePathError). Readers see the old or the new content, never a
// partial file; a crash before the rename leaves the old content and at most
// a stray temporary file, which List and Read ignore.
func (s *Store) WriteAtomic(name string, data []byte) error {
	if err := validName(name); err != nil {
		return err
	}
	dirfd, st, _, err := s.walkStat(false, false)
	if err != nil {
		return err
	}
	defer unix.Close(dirfd)
	if err := s.statName(dirfd, name); err != nil && !errors.Is(err, ErrNotExist) {
		return err
	}
	tmp, err := s.writeTemp(dirfd, name, data)
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

// CreateExclusive creates record name with data only if name does not exist
// (ErrExist otherwise), durably: temporary file + fsync, then
// renameat2(RENAME_NOREPLACE) (falling back to link(2) + unlink on file
// systems without it), then directory fsync. Of any number of concurrent
// creators, in any processes, exactly one succeeds.
func (s *Store) CreateExclusive(name string, data []byte) error {
	return s.CreateExclusiveAfter(name, data, nil)
}

// writeTemp writes data to a fresh O_EXCL temporary file and fsyncs it.
func (s *Store) writeTemp(dirfd int, name string, data []byte) (string, error) {
	tmp, fd, err := s.createTemp(dirfd, name, data)
	if err != nil {
		return "", err
	}
	s.at("after-temp-write")
	if err := s.closeSynced(fd, name); err != nil {
		_ = unix.Unlinkat(dirfd, tmp, 0)
		return "", err
	}
	return tmp, nil
}

// createTemp writes data to a fresh O_EXCL temporary file (mode 0600) and returns its name and open
// descriptor, not yet fsynced. On error nothing is left behind.
func (s *Store) createTemp(dirfd int, name string, data []byte) (string, int, error) {
	var rnd [8]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		return "", -1, errors.Wrap(err, "safefile: random temp name")
	}
	tmp := tempPrefix + name + "-" + hex.EncodeToString(rnd[:])
	fd, err := unix.Openat(dirfd, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, 0o600)
	if err != nil {
		return "", -1, errors.Wrapf(err, "safefile: create temporary file in %s", s.dir)
	}
	fail := func(err error, what string) (string, int, error) {
		_ = unix.Close(fd)
		_ = unix.Unlinkat(dirfd, tmp, 0)
		return "", -1, errors.Wrapf(err, "safefile: %s temporary file for %s", what, s.path(name))
	}
	if err := s.fixCreated(fd, 0o600); err != nil {
		return fail(err, "prepare")
	}
	for off := 0; off < len(data); {
		n, err := unix.Write(fd, data[off:])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return fail(err, "write")
		}
		off += n
	}
	return tmp, fd, nil
}

// closeSynced fsyncs and closes the temporary file fd (of record name). It does not remove it.
func (s *Store) closeSynced(fd int, name string) error {
	err := s.fsync(fd)
	if cerr := unix.Close(fd); err == nil && cerr != nil {
		return errors.Wrapf(cerr, "safefile: close temporary file for %s", s.path(name))
	}
	if err != nil {
		return errors.Wrapf(err, "safefile: fsync temporary file for %s", s.path(name))
	}
	return nil
}

// List returns the sorted names of records starting with prefix. Temporary
// files and lock files are not records and are not listed. Names are listed
// whatever their safety; Read checks each.
func (s *Store) List(prefix string) ([]string, error) {
	if strings.ContainsAny(prefix, "/\x00") {
		return nil, errors.WithStack(ErrInvalidName)
	}
	dirfd, err := s.openDir()
	if err != nil {
		return nil, err
	}
	defer unix.Close(dirfd)
	var names []string
	buf := make([]byte, 8192)
	for {
		n, err := unix.Getdents(dirfd, buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, errors.Wrapf(err, "safefile: list %s", s.dir)
		}
		if n <= 0 {
			break
		}
		_, _, names = unix.ParseDirent(buf[:n], -1, names)
	}
	out := names[:0]
	for _, nm := range names {
		if strings.HasPrefix(nm, prefix) && isValidName(nm) {
			out = append(out, nm)
		}
	}
	slices.Sort(out)
	return out, nil
}

// Remove deletes record name (ErrNotExist if absent). A name that fails the
// file rules is refused, not removed. The directory is fsynced.
func (s *Store) Remove(name string) error {
	if err := validName(name); err != nil {
		return err
	}
	dirfd, st, _, err := s.walkStat(false, false)
	if err != nil {
		return err
	}
	defer unix.Close(dirfd)
	if err := s.statName(dirfd, name); err != nil {
		return err
	}
	if err := unix.Unlinkat(dirfd, name, 0); err != nil {
		if err == unix.ENOENT {
			return errors.Wrapf(ErrNotExist, "%s", s.path(name))
		}
		return errors.Wrapf(err, "safefile: remove %s", s.path(name))
	}
	return s.syncDir(dirfd, &st)
}
