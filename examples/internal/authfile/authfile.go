// Package authfile reads the files that carry authority (bearer tokens, principal mappings, TLS
// certificates, keys and CA bundles, client bindings, profile tables) and checks the directories that
// do (a catalog), all the same way: a file is a regular file owned by this process's user or root, not
// writable by others (not readable by them either when private), at most a size bound, opened without
// blocking (a FIFO or a device is refused, never waited on) and read within the caller's context; it
// and every symbolic link on the way to it sit in directories no other user can write (a sticky
// directory such as /tmp is accepted for entries owned by this user or root), so that nobody else can
// swap what is read. A symbolic link to a safe file is accepted: Kubernetes mounts secrets as
// token -> ..data/token -> ..2026_12_07/token.
//
// Every error is an *Error (errors.As) that names the variable, never the path or the file's content.
package authfile

import (
	"context"
	"errors"
	"fmt"
	"os"
)

// ErrUnsafe matches every refusal of this package (errors.Is): the file or directory is unsafe,
// missing, unreadable, too large or not read in time.
var ErrUnsafe = errors.New("authfile: unsafe or unreadable authority file")

// Error is a refusal: the variable that names the file (Env) and the reason (Reason), without the path.
type Error struct {
	Env    string
	Reason string
}

func (e *Error) Error() string { return e.Env + ": " + e.Reason }

// Is makes every *Error match ErrUnsafe.
func (e *Error) Is(target error) bool { return target == ErrUnsafe }

func refuse(env, format string, args ...any) error {
	return &Error{Env: env, Reason: fmt.Sprintf(format, args...)}
}

// Options says how a file is read.
type Options struct {
	// Private: the file holds a secret (a token hash list, a key): no group or world permission bit at
	// all (0600 or 0400). Otherwise it must not be group or world writable.
	Private bool
	// MaxBytes bounds the file's size (DefaultMaxBytes when 0).
	MaxBytes int64
}

// DefaultMaxBytes is the size bound of a file when Options.MaxBytes is 0.
const DefaultMaxBytes = 1 << 20

// Read reads the file at path, named by the variable env in errors, after the checks of the package doc.
// It returns when ctx ends even if the file system does not (the read then goes on in the background
// and its result is dropped).
func Read(ctx context.Context, env, path string, o Options) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, refuse(env, "not read: %v", err)
	}
	if o.MaxBytes <= 0 {
		o.MaxBytes = DefaultMaxBytes
	}
	type result struct {
		b   []byte
		err error
	}
	done := make(chan result, 1)
	go func() {
		b, err := read(env, path, o)
		done <- result{b, err}
	}()
	select {
	case r := <-done:
		return r.b, r.err
	case <-ctx.Done():
		return nil, refuse(env, "not read in time: %v", ctx.Err())
	}
}

// CheckDir checks a directory that carries authority (a catalog): a directory owned by this process's
// user or root, not group or world writable, in directories no other user can write. A directory that
// does not exist yet is checked through its parent (where it will be created).
func CheckDir(ctx context.Context, env, path string) error {
	if err := ctx.Err(); err != nil {
		return refuse(env, "not checked: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- checkDir(env, path) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return refuse(env, "not checked in time: %v", ctx.Err())
	}
}

// errnoText is the system's reason without the path (*os.PathError's Err).
func errnoText(err error) string {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		return le.Err.Error()
	}
	return "error"
}
