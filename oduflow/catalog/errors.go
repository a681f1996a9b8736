package catalog

import (
	"github.com/cockroachdb/errors"
	"github.com/oduflow/oduflow-go/internal/errmark"
)

// Sentinel errors. Test them with errors.Is.
var (
	// ErrNotFound: no such record (or, through an Observer, a record of a company it may not read).
	ErrNotFound = errors.New("catalog: not found")
	// ErrExists: a record with that identity exists with different content (a request id is used once).
	ErrExists = errors.New("catalog: already exists")
	// ErrInvalid: a malformed identity, company, name, mode or outcome.
	ErrInvalid = errors.New("catalog: invalid input")
	// ErrInvalidSource: the compiler refused the source (the cause carries its code and position).
	ErrInvalidSource = errors.New("catalog: invalid custom source")
	// ErrImmutable: an update would rewrite a confirmed terminal outcome.
	ErrImmutable = errors.New("catalog: confirmed outcome is immutable")
	// ErrCorrupt: a stored record does not decode or does not match its name.
	ErrCorrupt = errors.New("catalog: corrupt record")
	// ErrPointer: the request id was recorded as a pointer to another execution, not as an execution.
	ErrPointer = errors.New("catalog: request id points to another execution")
)

func invalidf(format string, args ...any) error {
	return errmark.Mark(errors.Newf(format, args...), ErrInvalid)
}
