package receipt

import (
	"strings"

	"github.com/google/uuid"

	"github.com/oduflow/oduflow-go/internal/errmark"
)

// minionIDPrefix is the fixed prefix of every managed minion id.
const minionIDPrefix = "client-"

// isCanonicalUUID reports whether s is exactly 8-4-4-4-12 lowercase hex.
// Version and variant bits are not constrained: the controller owns its ids,
// protocol 1 only demands the canonical spelling.
func isCanonicalUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < 36; i++ {
		c := s[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
				return false
			}
		}
	}
	return true
}

// maxMinionIDLen is the longest minion id the id policy accepts: with the file store's prefixes and
// suffixes (lease-<id>.lock) every name it makes of an id stays a valid file name.
const maxMinionIDLen = 128

// lockSuffix ends the names the stores keep for their lock files (internal/safefile): no minion id ends so.
const lockSuffix = ".lock"

// ValidateMinionID accepts a minion id of the id policy: an ASCII letter or
// digit, then up to 127 ASCII letters, digits, '.', '_' or '-', with no ".."
// and not ending in ".lock" (the stores' lock files).
// Such an id is what Salt's list matcher targets as exactly one minion (no
// glob, regex or list character: no '*', '?', '[', ',', whitespace), one safe
// path component (no '/', NUL, leading '.', "..") and one etcd key segment.
// Every "client-" + lowercase UUID (ValidateSeedMinionID) is one. Anything
// else is ErrInvalidID; the offending value is not echoed in the error.
func ValidateMinionID(s string) (err error) {
	defer errmark.Boundary(&err)
	if !isPolicyMinionID(s) {
		return &idError{kind: "minion id", want: "1-128 of [A-Za-z0-9._-], starting with a letter or digit, " +
			"no \"..\", not ending in .lock; e.g. web01.example.com or client-" + exampleUUID}
	}
	return nil
}

// isPolicyMinionID is the id policy of ValidateMinionID.
func isPolicyMinionID(s string) bool {
	if len(s) == 0 || len(s) > maxMinionIDLen || strings.HasSuffix(s, lockSuffix) {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case i > 0 && (c == '-' || c == '_'):
		case i > 0 && c == '.':
			if s[i-1] == '.' {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// ValidateSeedMinionID accepts exactly "client-" + canonical lowercase UUID:
// the seeds' id policy (a profile table with minion_ids: seeds, the default).
// Anything else (upper case, braces, missing dashes, surrounding space) is
// ErrInvalidID. The offending value is not echoed in the error.
func ValidateSeedMinionID(s string) (err error) {
	defer errmark.Boundary(&err)
	if len(s) != len(minionIDPrefix)+36 || s[:len(minionIDPrefix)] != minionIDPrefix ||
		!isCanonicalUUID(s[len(minionIDPrefix):]) {
		return &idError{kind: "minion id", want: "client-<lowercase UUID>, e.g. client-" + exampleUUID}
	}
	return nil
}

// ValidateRequestID accepts exactly a canonical lowercase UUID.
func ValidateRequestID(s string) (err error) {
	defer errmark.Boundary(&err)
	if !isCanonicalUUID(s) {
		return &idError{kind: "request id", want: "a lowercase UUID (8-4-4-4-12 hex digits), e.g. " + exampleUUID}
	}
	return nil
}

// NewRequestID returns a fresh random (version 4) UUID in canonical form.
func NewRequestID() string {
	return uuid.NewString()
}

// ValidateJID accepts exactly 20 ASCII digits (Salt's %Y%m%d%H%M%S%f).
func ValidateJID(s string) (err error) {
	defer errmark.Boundary(&err)
	if len(s) != 20 {
		return &idError{kind: "jid", want: "exactly 20 ASCII digits"}
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return &idError{kind: "jid", want: "exactly 20 ASCII digits"}
		}
	}
	return nil
}

// isDigestHex reports whether s is a SHA-256 digest in lowercase hex.
func isDigestHex(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// idError names which identifier was malformed and the form it must have
// (never its value, which is untrusted) and unwraps to ErrInvalidID. It is
// one line in any formatting (%v, %+v: no stack).
type idError struct{ kind, want string }

func (e *idError) Error() string { return "receipt: invalid " + e.kind + " (want " + e.want + ")" }

// exampleUUID shows the canonical form in id errors.
const exampleUUID = "0f8fad5b-d9cb-469f-a165-70867728950e"

// Unwrap makes errors.Is(err, ErrInvalidID) true.
func (e *idError) Unwrap() error { return ErrInvalidID }
