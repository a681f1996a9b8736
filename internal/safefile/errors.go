package safefile

import (
	"fmt"

	"github.com/cockroachdb/errors"
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
)

// UnsafePathError says which path failed a store safety rule and why. The
// path is a local file system path, not a secret.
type UnsafePathError struct {
	Path   string
	Reason string // symlink, not_directory, not_regular, foreign_owner, permissions, multiple_links
}

func (e *UnsafePathError) Error() string {
	return fmt.Sprintf("safefile: unsafe path %q: %s", e.Path, e.Reason)
}

// Unwrap makes errors.Is(err, ErrUnsafePath) true, and errors.Is(err,
// ErrNotRegular) true for the reason not_regular.
func (e *UnsafePathError) Unwrap() []error {
	if e.Reason == "not_regular" {
		return []error{ErrUnsafePath, ErrNotRegular}
	}
	return []error{ErrUnsafePath}
}
