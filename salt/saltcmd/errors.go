package saltcmd

import (
	"github.com/cockroachdb/errors"

	"github.com/oduflow/oduflow-go/salt"
)

var (
	// ErrGuardedFunction: the function belongs to the dispatcher (oduflow_job.*). Running it
	// through the general client would bypass the dispatcher's claims and receipts, so it is
	// refused before any I/O. It also matches salt.ErrInvalidRequest and salt.ErrNotSent.
	ErrGuardedFunction = errors.New("saltcmd: function reserved to the oduflow dispatcher")
	// ErrInvalidTarget: the target type is unknown or its expression cannot be valid for that
	// type; refused before any I/O. It also matches salt.ErrInvalidRequest and salt.ErrNotSent.
	ErrInvalidTarget = errors.New("saltcmd: invalid target")
	// ErrInvalidCommand: a bad function name, batch size, timeout or option; refused before any
	// I/O. It also matches salt.ErrInvalidRequest and salt.ErrNotSent.
	ErrInvalidCommand = errors.New("saltcmd: invalid command")
	// ErrMalformedReturn: an event claimed to be a return but its data does not have the shape
	// of one (ParseReturn).
	ErrMalformedReturn = errors.New("saltcmd: malformed return")
)

// refused marks a local refusal: nothing was sent.
type refused struct {
	kind error
	msg  string
}

func (e *refused) Error() string { return e.kind.Error() + ": " + e.msg }

// Is lets errors.Is match the kind, salt.ErrInvalidRequest and salt.ErrNotSent, so that
// salt.IsNotPublished is true for every local refusal.
func (e *refused) Is(target error) bool {
	return target == e.kind || target == salt.ErrInvalidRequest || target == salt.ErrNotSent
}

func refuse(kind error, format string, args ...any) error {
	return errors.WithStack(&refused{kind: kind, msg: errors.Newf(format, args...).Error()})
}
