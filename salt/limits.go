package salt

import (
	"github.com/cockroachdb/errors"

	"github.com/oduflow/oduflow-go/internal/errmark"
	"github.com/oduflow/oduflow-go/internal/saltwire"
)

// decodeLimits bound what decoding one untrusted msgpack document may allocate (the wire's
// budget, internal/saltwire: every value is charged an estimate of the Go memory it costs before
// it is allocated, and decoding stops with errDecodeBudget as soon as the estimate would exceed
// MaxBytes).
type decodeLimits = saltwire.Limits

// decodeBudget is what one document may still spend.
type decodeBudget = saltwire.Budget

// Decode budget defaults (Limits). An event frame is at most defaultMaxFrameBytes (16 MiB): with the
// frame's own text (its strings alias it) and the 24 MiB event queue, one frame at the cap cannot
// grow the process by more than 64 MiB. A reply (at most defaultMaxReplyBytes, 16 MiB) copies its
// strings, hence its larger byte budget.
const (
	defaultEventDecodeMaxBytes    = 8 << 20
	defaultEventDecodeMaxElements = 1 << 20
	defaultReplyDecodeMaxBytes    = 32 << 20
	defaultReplyDecodeMaxElements = 2 << 20
	defaultDecodeMaxDepth         = 256
)

// defaultEventDecodeLimits are the decode limits of SubscribeEvents (WithLimits).
func defaultEventDecodeLimits() decodeLimits {
	return decodeLimits{MaxElements: defaultEventDecodeMaxElements, MaxBytes: defaultEventDecodeMaxBytes, MaxDepth: defaultDecodeMaxDepth}
}

// defaultReplyDecodeLimits are the decode limits of a Client (WithLimits) and of decodeValue.
func defaultReplyDecodeLimits() decodeLimits {
	return decodeLimits{MaxElements: defaultReplyDecodeMaxElements, MaxBytes: defaultReplyDecodeMaxBytes, MaxDepth: defaultDecodeMaxDepth}
}

func budgetError(what string) error {
	return errmark.Mark(errors.Wrapf(errDecodeBudget, "%s", errors.Safe(what)), errMsgpack)
}

// wireDecodeError is a decoding error of internal/saltwire in this package's terms: a budget
// refusal is errDecodeBudget (ErrLimitExceeded), with the wire's message.
func wireDecodeError(err error) error {
	if errors.Is(err, saltwire.ErrBudget) {
		return errmark.Mark(err, errDecodeBudget, ErrLimitExceeded, errMsgpack)
	}
	return err
}

// Limits bound what one message from the master may cost before it is
// refused: a reply for a Client, one event frame for SubscribeEvents. A zero
// field keeps its default; a negative one makes the constructor fail with
// ErrInvalidRequest. A message beyond a limit fails with ErrLimitExceeded (a
// reply: also ErrOutcomeUnknown; an event frame: a Gap whose Err is it).
//
// Wire bytes are a poor bound on memory: an empty array is one byte on the
// wire and about 40 bytes decoded, so every decoded value is charged an
// estimate of the Go memory it costs before it is allocated.
type Limits struct {
	// MaxMessageBytes caps the wire size of a reply (default 16 MiB) or of
	// one event frame (default 16 MiB, at least 16; Salt trims events to
	// 1 MiB by default). A larger event frame drops the connection (a Gap,
	// then a reconnection).
	MaxMessageBytes int64
	// MaxValues caps the decoded values, map keys included (default 2 Mi for
	// a reply, 1 Mi for an event).
	MaxValues int64
	// MaxDecodedBytes caps the estimated memory of the decoded values
	// (default 32 MiB for a reply, which copies its strings; 8 MiB for an
	// event, whose strings alias its frame).
	MaxDecodedBytes int64
	// MaxDepth caps the nesting of arrays, maps and ext payloads (default 256).
	MaxDepth int
}

// applyTo overrides the defaults in *msg and *dec with the non-zero fields.
func (l Limits) applyTo(msg *int64, dec *decodeLimits) {
	if l.MaxMessageBytes != 0 {
		*msg = l.MaxMessageBytes
	}
	if l.MaxValues != 0 {
		dec.MaxElements = l.MaxValues
	}
	if l.MaxDecodedBytes != 0 {
		dec.MaxBytes = l.MaxDecodedBytes
	}
	if l.MaxDepth != 0 {
		dec.MaxDepth = l.MaxDepth
	}
}
