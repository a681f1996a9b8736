package receipt

import (
	"fmt"

	"github.com/cockroachdb/errors"
)

// Sentinel errors. Test them with errors.Is; an *InvalidReceiptError carries
// the detail of a refused receipt and unwraps to ErrInvalidReceipt.
var (
	// ErrInvalidID: a minion id that is not "client-" followed by a canonical
	// lowercase UUID, a request id that is not a canonical lowercase UUID
	// (8-4-4-4-12), or a JID that is not exactly 20 ASCII digits. The message
	// says which.
	ErrInvalidID = errors.New("receipt: invalid id")
	// ErrUnknownProfile: not one of the five protocol 1 profiles.
	ErrUnknownProfile = errors.New("receipt: unknown profile")
	// ErrInvalidReceipt: a receipt that is not evidence for the claim it was
	// offered for: it breaks the protocol 1 schema, it belongs to another
	// claim, or its proof does not verify. The *InvalidReceiptError says which.
	ErrInvalidReceipt = errors.New("receipt: invalid receipt")
)

// Unexported sentinels: callers only need err != nil; the package's own tests
// tell them apart.
var (
	// errNotCanonical: a value that has no RFC 8785 canonical form (NaN,
	// infinities, integers beyond ±2^53, invalid UTF-8, unsupported Go types,
	// non-string map keys, nesting deeper than maxDepth).
	errNotCanonical = errors.New("receipt: value has no canonical JSON form")
	// errIllegalTransition: a minion receipt phase change not in the table.
	errIllegalTransition = errors.New("receipt: illegal phase transition")
)

// Schema reasons carried by InvalidReceiptError.Reason (the table in the
// package documentation). They are short machine words shared with the Python
// module through testdata/receipt-cases.json: never change one.
const (
	reasonBadJSON      = "bad_json"      // not parseable JSON, trailing data, invalid UTF-8, not an object
	reasonDuplicateKey = "duplicate_key" // the same key twice in one JSON object
	reasonUnknownKey   = "unknown_key"   // a key outside the nine and the optional code
	reasonMissingKey   = "missing_key"   // one of the nine keys absent
	reasonWrongType    = "wrong_type"    // e.g. a string for an int, true or 1.0 for an int
	reasonBadProtocol  = "bad_protocol"  // protocol is an integer other than 1
	reasonBadMinionID  = "bad_minion_id"
	reasonBadRequestID = "bad_request_id"
	reasonBadJID       = "bad_jid"
	reasonBadProfile   = "bad_profile"
	reasonBadStatus    = "bad_status"
	reasonBadDigest    = "bad_digest"
	reasonBadCode      = "bad_code" // a code other than fenced, or a code on a status other than failed
	reasonCounts       = "counts"   // negative, too large, passed > total, or inconsistent with status
	// reasonBinding: a valid receipt whose Field differs from the claim (Binding.Check).
	reasonBinding = "binding"
)

// InvalidReceiptError explains why a receipt was refused. Reason is one of the
// words in the package documentation's table (schema reasons, "binding", or a
// proof reason); Field names the offending key when there is one. Values from
// the candidate are never included (they are untrusted).
type InvalidReceiptError struct {
	Reason string
	Field  string
}

func (e *InvalidReceiptError) Error() string {
	switch {
	case e.Reason == reasonBinding:
		return "receipt: binding mismatch on " + e.Field
	case e.Field == "":
		return "receipt: invalid receipt: " + e.Reason
	}
	return fmt.Sprintf("receipt: invalid receipt: %s (field %s)", e.Reason, e.Field)
}

// Unwrap makes errors.Is(err, ErrInvalidReceipt) true.
func (e *InvalidReceiptError) Unwrap() error { return ErrInvalidReceipt }

func invalid(reason, field string) error {
	return &InvalidReceiptError{Reason: reason, Field: field}
}

// transitionError is returned by checkTransition for a change that is not in
// the minion receipt state table.
type transitionError struct {
	From, To    phase
	Trustworthy bool
}

func (e *transitionError) Error() string {
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

// Unwrap makes errors.Is(err, errIllegalTransition) true.
func (e *transitionError) Unwrap() error { return errIllegalTransition }
