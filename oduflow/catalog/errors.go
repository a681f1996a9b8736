package catalog

import (
	"github.com/cockroachdb/errors"
	"github.com/oduflow/oduflow-go/internal/errmark"
)

// Sentinel errors. Test them with errors.Is; each refusal matches exactly one of them.
var (
	// ErrNotFound: no such record.
	ErrNotFound = errors.New("catalog: not found")
	// ErrExists: the record, name or outcome is already taken: a record with that identity exists
	// with different content (a request id is used once), the company and name are held by another
	// definition, or an update would rewrite a confirmed terminal outcome.
	ErrExists = errors.New("catalog: already exists")
	// ErrInvalid: a malformed identity, company, name, mode or outcome; a custom source the compiler
	// refused (the cause carries the compiler's code and position: errors.As it); or a pointer
	// request id used where an execution id is needed (Resolve follows pointers).
	ErrInvalid = errors.New("catalog: invalid input")
	// ErrCorrupt: a stored record does not decode or does not match its name.
	ErrCorrupt = errors.New("catalog: corrupt record")
)

// Finer refusals for the package's own tests; each matches one exported sentinel above.
var (
	// errInvalidSource: the compiler refused the source.
	errInvalidSource = errmark.Mark(errors.New("catalog: invalid custom source"), ErrInvalid)
	// errImmutable: an update would rewrite a confirmed terminal outcome.
	errImmutable = errmark.Mark(errors.New("catalog: confirmed outcome is immutable"), ErrExists)
	// errPointer: the request id was recorded as a pointer to another execution, not as an execution.
	errPointer = errmark.Mark(errors.New("catalog: request id points to another execution"), ErrInvalid)
)

func invalidf(format string, args ...any) error {
	return errmark.Mark(errors.Newf(format, args...), ErrInvalid)
}
