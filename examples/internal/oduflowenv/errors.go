package oduflowenv

import (
	"errors"
	"fmt"
	"strings"
)

// The kinds of configuration errors (test with errors.Is).
var (
	// ErrUsage: a setting is missing or malformed, or a file or directory it names is unusable.
	ErrUsage = errors.New("oduflowenv: bad configuration")
	// ErrUnreachable: a service the settings name (the etcd claim store) does not answer.
	ErrUnreachable = errors.New("oduflowenv: unreachable")
	// ErrRefused: a service the settings name refused the credentials or the permission.
	ErrRefused = errors.New("oduflowenv: refused")
)

// Error is a configuration error: its Kind (ErrUsage, ErrUnreachable or ErrRefused) and a one-line
// message naming the setting.
type Error struct {
	Kind error
	Msg  string
	// Cause is the underlying error, if any (its message is already in Msg).
	Cause error
}

func (e *Error) Error() string { return e.Msg }

// Unwrap returns the kind and the cause, so that errors.Is sees both.
func (e *Error) Unwrap() []error {
	if e.Cause == nil {
		return []error{e.Kind}
	}
	return []error{e.Kind, e.Cause}
}

func usagef(format string, args ...any) error {
	return &Error{Kind: ErrUsage, Msg: fmt.Sprintf(format, args...)}
}

// configf is a configuration error that keeps its cause.
func configf(cause error, format string, args ...any) error {
	return &Error{Kind: ErrUsage, Msg: fmt.Sprintf(format, args...) + ": " + OneLine(cause.Error()), Cause: cause}
}

// OneLine is the first line of s, trimmed: what a one-line message keeps of an error.
func OneLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return s
}
