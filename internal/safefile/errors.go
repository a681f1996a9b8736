package safefile

import (
	"fmt"

	"github.com/cockroachdb/errors"
	"golang.org/x/sys/unix"
)

// Sentinel errors. Test them with errors.Is (the standard library's or cockroachdb's).
var (
	// ErrNotExist: the record (or lock file) does not exist.
	ErrNotExist = errors.New("safefile: record does not exist")
	// ErrExist: CreateExclusive found the name already present.
	ErrExist = errors.New("safefile: record already exists")
	// ErrUnsafePath: a path component or file failed the safety rules
	// (symlink, foreign owner, group/other permission bits, not a regular
	// file or directory, more than one hard link). See *UnsafePathError.
	ErrUnsafePath = errors.New("safefile: unsafe path")
	// ErrNotRegular: the name is a FIFO, socket, device or directory where a
	// regular file must be. It is refused at once, without blocking (every
	// open is O_NONBLOCK), and the error is also ErrUnsafePath with the
	// reason "not_regular".
	ErrNotRegular = errors.New("safefile: not a regular file")
	// ErrLocked: the lock is held by a live holder (any process).
	ErrLocked = errors.New("safefile: locked")
	// ErrInvalidName: a record name that is not a plain, safe file name.
	ErrInvalidName = errors.New("safefile: invalid name")
	// ErrCorrupt: a record that exists and is safe but whose content is not
	// what it must be (too large, or changed while reading). It stays an
	// error: it is never replaced.
	ErrCorrupt = errors.New("safefile: corrupt record")
	// ErrLockPoolReplaced: the pool file of a LockPool is no longer the one
	// in the directory (deleted, renamed over, recreated): its locks no
	// longer exclude a process that opened the new file. Every lock
	// operation of the pool fails with it (an *UnsafePathError with the
	// reason lock_pool_replaced); the caller opens a new pool.
	ErrLockPoolReplaced = errors.New("safefile: lock pool file replaced")
)

// StorageRefused reports whether err is the file system refusing to store
// more: no space left (ENOSPC), a disk quota exceeded (EDQUOT), or a
// read-only file system (EROFS). Writes that fail so leave nothing behind:
// the temporary file is removed and the record keeps its old content.
func StorageRefused(err error) bool {
	return errors.Is(err, unix.ENOSPC) || errors.Is(err, unix.EDQUOT) || errors.Is(err, unix.EROFS)
}

// UnsafePathError says which path failed a store safety rule and why. The
// path is a local file system path, not a secret.
type UnsafePathError struct {
	Path   string
	Reason string // symlink, not_directory, not_regular, foreign_owner, permissions, multiple_links
	// Detail says what was found and what is wanted ("mode 0755, want 0700"), for a person to fix it;
	// "" when the reason says it all.
	Detail string
}

func (e *UnsafePathError) Error() string {
	if e.Detail != "" {
		return fmt.Sprintf("safefile: unsafe path %q: %s (%s)", e.Path, e.Reason, e.Detail)
	}
	return fmt.Sprintf("safefile: unsafe path %q: %s", e.Path, e.Reason)
}

// Unwrap makes errors.Is(err, ErrUnsafePath) true, errors.Is(err,
// ErrNotRegular) true for the reason not_regular, and errors.Is(err,
// ErrLockPoolReplaced) true for the reason lock_pool_replaced.
func (e *UnsafePathError) Unwrap() []error {
	switch e.Reason {
	case "not_regular":
		return []error{ErrUnsafePath, ErrNotRegular}
	case reasonPoolReplaced:
		return []error{ErrUnsafePath, ErrLockPoolReplaced}
	}
	return []error{ErrUnsafePath}
}
