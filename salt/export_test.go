package salt

import "time"

// Test-only names: the package's own tests reach unexported details through
// them (external tests included). None of them is part of the API.

// Decoders, encoder and their errors.
var (
	DecodeValue        = decodeValue
	DecodeValueLimited = decodeValueLimited
	EncodeValue        = encodeValue
	DecodeEventFrame   = decodeEventFrame
	NewOrderedMap      = newOrderedMap

	ErrMsgpack         = errMsgpack
	ErrUnsupportedType = errUnsupportedType
	ErrDecodeBudget    = errDecodeBudget
	ErrFrameTooLarge   = errFrameTooLarge
	ErrFrameTimeout    = errFrameTimeout
	ErrReplyTooLarge   = errReplyTooLarge
)

type (
	DecodeLimits       = decodeLimits
	OrderedMap         = orderedMap
	NoMinionsError     = noMinionsError
	ReplyMismatchError = replyMismatchError
)

// Defaults.
const (
	DefaultMaxFrameBytes       = defaultMaxFrameBytes
	DefaultMaxReplyBytes       = defaultMaxReplyBytes
	DefaultEnvelopeVersion     = defaultEnvelopeVersion
	DefaultEventDecodeMaxBytes = defaultEventDecodeMaxBytes
	GapReasonReconnected       = gapReasonReconnected
	GapReasonDisconnected      = gapReasonDisconnected
)

// StaticToken is a TokenSource for a fixed token.
func StaticToken(token string) TokenSource { return staticToken(token) }

// WithTokenClock replaces time.Now of NewTokenSource.
func WithTokenClock(now func() time.Time) TokenOption { return withClock(now) }

// The former single-purpose limit options, as WithLimits.
func WithMaxReplyBytes(n int64) CommonOption { return WithLimits(Limits{MaxMessageBytes: n}) }
func WithMaxFrameBytes(n int) CommonOption   { return WithLimits(Limits{MaxMessageBytes: int64(n)}) }
func WithReplyDecodeLimits(l decodeLimits) CommonOption {
	return WithLimits(Limits{MaxValues: l.MaxElements, MaxDecodedBytes: l.MaxBytes, MaxDepth: l.MaxDepth})
}
func WithEventDecodeLimits(l decodeLimits) CommonOption { return WithReplyDecodeLimits(l) }

// EventKind classifies an Event in tests (the API tests the pointers).
type EventKind int

const (
	EventGap EventKind = iota
	EventJobNew
	EventJobReturn
	EventOther
	EventJobPublish
)

func (k EventKind) String() string {
	return [...]string{"gap", "job_new", "job_return", "other", "job_publish"}[k]
}

// Kind is the kind of e.
func (e Event) Kind() EventKind {
	switch {
	case e.Gap != nil:
		return EventGap
	case e.JobNew != nil:
		return EventJobNew
	case e.JobReturn != nil:
		return EventJobReturn
	case e.JobPublish != nil:
		return EventJobPublish
	}
	return EventOther
}

// FramesRead is how many frames the stream's reader has read (any tag, before filtering): a test's
// "slow consumer" waits for it instead of sleeping.
func FramesRead(s *EventStream) uint64 { return s.frames.Load() }
