package errmark

import (
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/cockroachdb/errors"
)

// maxLineBytes bounds the one-line form of an error: a message is a reason, not a report (the details
// stay reachable through errors.As).
const maxLineBytes = 1024

// OneLine returns err in its public form: the same message, one line however it is formatted (%v, %+v,
// %s, %q; a slog text or JSON handler, through LogValue) with no stack and no source path, while
// errors.Is/As of both libraries still reach every cause and sentinel. cockroachdb's errors print their
// stack traces for %+v, which slog's text handler uses: every error a public package returns goes through
// OneLine at the API boundary (Boundary). nil stays nil; an error already in its public form is returned
// as is.
func OneLine(err error) error {
	if err == nil {
		return nil
	}
	if _, ok := err.(*oneLine); ok {
		return err
	}
	return &oneLine{cause: err}
}

// Boundary replaces *errp with its public form (OneLine): `defer errmark.Boundary(&err)` in an exported
// function with a named error result.
func Boundary(errp *error) {
	if errp != nil && *errp != nil {
		*errp = OneLine(*errp)
	}
}

type oneLine struct{ cause error }

// Error is the cause's message with line breaks and other control characters replaced by spaces,
// bounded to maxLineBytes.
func (e *oneLine) Error() string { return flatten(e.cause.Error()) }

// Unwrap exposes the cause to errors.Is/As of both libraries.
func (e *oneLine) Unwrap() error { return e.cause }

// Format prints the one-line message for every verb: %+v prints no stack.
func (e *oneLine) Format(s fmt.State, verb rune) {
	if verb == 'q' {
		fmt.Fprintf(s, "%q", e.Error())
		return
	}
	_, _ = io.WriteString(s, e.Error())
}

// LogValue makes slog's handlers print the message as a string (the text handler would use %+v).
func (e *oneLine) LogValue() slog.Value { return slog.StringValue(e.Error()) }

// SafeFormatError keeps redacted printing (errors.Redact) the cause's.
func (e *oneLine) SafeFormatError(errors.Printer) (next error) { return e.cause }

func flatten(s string) string {
	if strings.IndexFunc(s, isControl) >= 0 {
		s = strings.Map(func(r rune) rune {
			if isControl(r) {
				return ' '
			}
			return r
		}, s)
	}
	if len(s) > maxLineBytes {
		cut := maxLineBytes
		for cut > 0 && s[cut]&0xC0 == 0x80 { // not inside a UTF-8 sequence
			cut--
		}
		s = s[:cut] + "…"
	}
	return s
}

func isControl(r rune) bool { return r < 0x20 || r == 0x7f || r == '\u2028' || r == '\u2029' }
