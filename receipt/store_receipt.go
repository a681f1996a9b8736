package receipt

import (
	"bytes"

	"github.com/oduflow/oduflow-go/internal/errmark"

	"github.com/cockroachdb/errors"
)

// ReadReceipt reads and strictly decodes record name. A record that is safe
// but not a valid receipt (truncated, unknown keys, ...) is ErrCorrupt, and
// its *InvalidReceiptError stays reachable with errors.As. Store errors
// (ErrNotExist, *UnsafePathError, ...) pass through.
func (s *Store) ReadReceipt(name string) (Receipt, error) {
	data, err := s.Read(name)
	if err != nil {
		return Receipt{}, err
	}
	r, err := Decode(data)
	if err != nil {
		return Receipt{}, errmark.Mark(errors.Wrapf(err, "%s", s.path(name)), ErrCorrupt)
	}
	return r, nil
}

// WriteReceipt commits r (validated, canonical JSON) as record name with
// WriteAtomic. An existing record must itself read back as a valid receipt:
// a malformed or unsafe one is returned as an error and left untouched. An
// existing terminal receipt is immutable: rewriting the identical bytes is a
// no-op, anything else is ErrIllegalTransition. The caller serializes writers
// of one name (the request lock).
func (s *Store) WriteReceipt(name string, r Receipt) error {
	data, err := r.Encode()
	if err != nil {
		return err
	}
	old, err := s.ReadReceipt(name)
	switch {
	case errors.Is(err, ErrNotExist):
	case err != nil:
		return err
	case old.Status.Terminal():
		oldData, _ := old.Encode()
		if bytes.Equal(oldData, data) {
			return nil
		}
		return errors.WithStack(&TransitionError{From: PhaseTerminal, To: phaseOfStatus(r.Status)})
	}
	return s.WriteAtomic(name, data)
}

// CreateReceipt commits r as record name only if name does not exist yet
// (ErrExist otherwise), with CreateExclusive.
func (s *Store) CreateReceipt(name string, r Receipt) error {
	data, err := r.Encode()
	if err != nil {
		return err
	}
	return s.CreateExclusive(name, data)
}

func phaseOfStatus(st Status) Phase {
	switch st {
	case StatusSucceeded, StatusFailed:
		return PhaseTerminal
	case StatusRunning:
		return PhaseRunning
	case StatusUnknown:
		return PhaseUnknown
	}
	return PhaseNone
}
