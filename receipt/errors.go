package receipt

import (
	"fmt"

	"github.com/cockroachdb/errors"
)

// Sentinel errors. Test them with errors.Is; the typed errors below carry the
// detail and unwrap to one of these.
var (
	// ErrInvalidMinionID: not "client-" followed by a canonical lowercase UUID.
	ErrInvalidMinionID = errors.New("receipt: invalid minion id")
	// ErrInvalidRequestID: not a canonical lowercase UUID (8-4-4-4-12).
	ErrInvalidRequestID = errors.New("receipt: invalid request id")
	// ErrInvalidJID: not exactly 20 ASCII digits.
	ErrInvalidJID = errors.New("receipt: invalid jid")
	// ErrUnknownProfile: not one of the five protocol 1 profiles.
	ErrUnknownProfile = errors.New("receipt: unknown profile")
	// ErrInvalidReceipt: a receipt that does not satisfy the protocol 1 schema.
	// The *InvalidReceiptError carries the machine-readable reason.
	ErrInvalidReceipt = errors.New("receipt: invalid receipt")
	// ErrBindingMismatch: a valid receipt that belongs to another claim.
	ErrBindingMismatch = errors.New("receipt: binding mismatch")
	// ErrNotCanonical: a value that has no RFC 8785 canonical form (NaN,
	// infinities, integers beyond ±2^53, invalid UTF-8, unsupported Go types,
	// non-string map keys, nesting deeper than MaxDepth).
	ErrNotCanonical = errors.New("receipt: value has no canonical JSON form")
	// ErrIllegalTransition: a minion receipt phase change not in the table.
	ErrIllegalTransition = errors.New("receipt: illegal phase transition")
)

// Reasons carried by InvalidReceiptError.Reason. They are short machine words
// shared with the Python module through testdata/receipt-cases.json.
const (
	ReasonBadJSON      = "bad_json"      // not parseable JSON, trailing data, invalid UTF-8, not an object
	ReasonDuplicateKey = "duplicate_key" // the same key twice in one JSON object
	ReasonUnknownKey   = "unknown_key"   // a key outside the nine
	ReasonMissingKey   = "missing_key"   // one of the nine keys absent
	ReasonWrongType    = "wrong_type"    // e.g. a string for an int, true or 1.0 for an int
	ReasonBadProtocol  = "bad_protocol"  // protocol is an integer other than 1
	ReasonBadMinionID  = "bad_minion_id"
	ReasonBadRequestID = "bad_request_id"
	ReasonBadJID       = "bad_jid"
	ReasonBadProfile   = "bad_profile"
	ReasonBadStatus    = "bad_status"
	ReasonBadDigest    = "bad_digest"
	ReasonCounts       = "counts" // negative, too large, passed > total, or inconsistent with status
)

// InvalidReceiptError explains why a candidate receipt was refused. Reason is
// one of the Reason* constants; Field names the offending key when there is
// one. Values from the candidate are never included (they are untrusted).
type InvalidReceiptError struct {
	Reason string
	Field  string
}

func (e *InvalidReceiptError) Error() string {
	if e.Field == "" {
		return "receipt: invalid receipt: " + e.Reason
	}
	return fmt.Sprintf("receipt: invalid receipt: %s (field %s)", e.Reason, e.Field)
}

// Unwrap makes errors.Is(err, ErrInvalidReceipt) true.
func (e *InvalidReceiptError) Unwrap() error { return ErrInvalidReceipt }

func invalid(reason, field string) error {
	return &InvalidReceiptError{Reason: reason, Field: field}
}

// BindingError names the first field of a receipt that does not match the
// claim it was offered for.
type BindingError struct {
	Field string // minion_id, request_id, jid, profile or state_digest
}

func (e *BindingError) Error() string {
	return "receipt: binding mismatch on " + e.Field
}

// Unwrap makes errors.Is(err, ErrBindingMismatch) true.
func (e *BindingError) Unwrap() error { return ErrBindingMismatch }

// TransitionError is returned by CheckTransition for a change that is not in
// the minion receipt state table.
type TransitionError struct {
	From, To    Phase
	Trustworthy bool
}

func (e *TransitionError) Error() string {
	from := string(e.From)
	if from == "" {
		from = "none"
	}
	to := string(e.To)
	if to == "" {
		to = "none"
	}
	return fmt.Sprintf("receipt: illegal phase transition %s -> %s (trustworthy=%t)", from, to, e.Trustworthy)
}

// Unwrap makes errors.Is(err, ErrIllegalTransition) true.
func (e *TransitionError) Unwrap() error { return ErrIllegalTransition }
