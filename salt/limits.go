package salt

import (
	"github.com/cockroachdb/errors"

	"github.com/oduflow/oduflow-go/internal/errmark"
)

// decodeLimits bound what decoding one untrusted msgpack document may allocate. Wire bytes are a
// poor bound: an empty array is one byte on the wire and about 40 bytes decoded ([]any header
// plus its interface slot), so every value is charged an estimate of the Go memory it costs
// before it is allocated (see the cost constants below), and decoding stops with errDecodeBudget
// as soon as the estimate would exceed MaxBytes.
type decodeLimits struct {
	MaxElements int64 // decoded values, map keys included
	MaxBytes    int64 // estimated bytes allocated (values, slots, string and bin lengths)
	MaxDepth    int   // nesting of arrays, maps and ext 79 payloads
}

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

func (l decodeLimits) valid() bool { return l.MaxElements > 0 && l.MaxBytes > 0 && l.MaxDepth > 0 }

// Estimated Go memory of decoded values, measured on amd64 (Go 1.26): an interface slot or a
// string header is 16 bytes, a boxed []any header 24, a boxed number 8; a map header is 48, its
// first entry brings a group of 8 slots (about 320 bytes), later entries cost about 100 bytes
// each with growth. A map is charged per distinct key it actually holds (duplicate keys do not
// grow it), every value per occurrence (a replaced value was still allocated).
const (
	costSlot       = 16
	costArray      = 24
	costNumber     = 8
	costString     = 16
	costMap        = 48
	costFirstEntry = 336
	costEntry      = 112
	costExt        = 48
)

// decodeBudget is what one document may still spend. exceeded records why decoding stopped, so
// that a decoder reporting a bare failure (the event fast path) can tell a budget refusal from
// invalid data.
type decodeBudget struct {
	elems    int64
	bytes    int64
	maxDepth int
	exceeded bool
}

func newDecodeBudget(l decodeLimits) *decodeBudget {
	return &decodeBudget{elems: l.MaxElements, bytes: l.MaxBytes, maxDepth: l.MaxDepth}
}

// reset makes b a fresh budget of l (a reader reuses one budget for all its frames).
func (b *decodeBudget) reset(l decodeLimits) {
	*b = decodeBudget{elems: l.MaxElements, bytes: l.MaxBytes, maxDepth: l.MaxDepth}
}

// charge takes elems values and bytes estimated bytes, or reports false (and remembers it).
func (b *decodeBudget) charge(elems, bytes int64) bool {
	if b.exceeded || elems > b.elems || bytes > b.bytes {
		b.exceeded = true
		return false
	}
	b.elems -= elems
	b.bytes -= bytes
	return true
}

// depthOK reports whether depth is allowed (and remembers a refusal).
func (b *decodeBudget) depthOK(depth int) bool {
	if depth > b.maxDepth {
		b.exceeded = true
		return false
	}
	return true
}

// spent is the estimate of what was charged so far.
func (b *decodeBudget) spent(l decodeLimits) int64 { return l.MaxBytes - b.bytes }

func budgetError(what string) error {
	return errmark.Mark(errors.Wrapf(errDecodeBudget, "%s", errors.Safe(what)), errMsgpack)
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
