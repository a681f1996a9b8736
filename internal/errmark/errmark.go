// Package errmark attaches sentinel errors to an error so that both the standard library's errors.Is/As and
// cockroachdb/errors see them.
//
// cockroachdb's errors.Mark is invisible to the standard library: its wrapper unwraps only to the cause, and
// the mark is compared by cockroachdb's own Is. A caller that writes errors.Is(err, salt.ErrOutcomeUnknown)
// with import "errors" must get true, or it may retry a publish that went out. Mark returns a wrapper whose
// Unwrap() error yields the cause and whose Is method reports the sentinels: both libraries call Is on every
// error of the chain they walk, so both see the marks, and errors.As walks on into the cause (a sentinel is
// compared, never a target of As). The message and the redaction-safe formatting are the cause's: the
// sentinels add nothing to the text.
//
// OneLine (oneline.go) gives an error its public form: one line for every verb and in every slog
// handler, its causes still reachable; the public packages apply it at their API boundary (Boundary).
package errmark

import (
	"fmt"

	"github.com/cockroachdb/errors"
)

// Mark returns err marked with each sentinel, or nil when err is nil.
func Mark(err error, sentinels ...error) error {
	if err == nil {
		return nil
	}
	return &marked{cause: err, marks: sentinels}
}

type marked struct {
	cause error
	marks []error
}

func (e *marked) Error() string { return e.cause.Error() }

// Unwrap exposes the cause to errors.Is/As of both libraries.
func (e *marked) Unwrap() error { return e.cause }

// Is reports whether target is one of the sentinels (both libraries call it on every error of the chain).
func (e *marked) Is(target error) bool {
	for _, m := range e.marks {
		if m == target {
			return true
		}
	}
	return false
}

// SafeFormatError keeps redacted printing identical to the cause's: the wrapper prints nothing itself.
func (e *marked) SafeFormatError(p errors.Printer) (next error) { return e.cause }

// Format makes %+v print the cause's details (cockroachdb's formatter), never secrets it marked unsafe.
func (e *marked) Format(s fmt.State, verb rune) { errors.FormatError(e, s, verb) }
