package salt

import (
	"log/slog"
	"time"
)

// Option configures NewClient, SubscribeEvents or NewTokenSource; a
// constructor ignores the options it does not read, so one list can be shared.
//
//   - NewClient: WithAuth, WithRequestTimeout, WithConnectionReuse,
//     WithEnvelopeVersion, WithOSUser;
//   - SubscribeEvents: WithTagPrefixes, WithEventBuffer, WithFrameTimeout,
//     WithReconnectBackoff, WithEventDialer;
//   - both: WithLogger, WithLimits (each with its own defaults);
//   - NewTokenSource: WithRenewBefore.
type Option func(*settings)

// settings collects every option; each constructor reads its own part.
type settings struct {
	client      clientConfig
	event       eventConfig
	limits      Limits
	renewBefore time.Duration    // NewTokenSource; 0 = default
	now         func() time.Time // NewTokenSource (tests)
}

func clientOption(f func(*clientConfig)) Option { return func(s *settings) { f(&s.client) } }

func eventOption(f func(*eventConfig)) Option { return func(s *settings) { f(&s.event) } }

func applyOptions(s *settings, opts []Option) {
	for _, o := range opts {
		if o != nil {
			o(s)
		}
	}
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

// WithLimits sets the limits of a Client's replies or of an event stream's
// frames (NewClient, SubscribeEvents). Non-zero fields of later WithLimits
// options override earlier ones.
func WithLimits(l Limits) Option {
	return func(s *settings) {
		if l.MaxMessageBytes != 0 {
			s.limits.MaxMessageBytes = l.MaxMessageBytes
		}
		if l.MaxValues != 0 {
			s.limits.MaxValues = l.MaxValues
		}
		if l.MaxDecodedBytes != 0 {
			s.limits.MaxDecodedBytes = l.MaxDecodedBytes
		}
		if l.MaxDepth != 0 {
			s.limits.MaxDepth = l.MaxDepth
		}
	}
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

// WithLogger sets the structured logger of a Client or an event stream
// (default: discard). The client logs commands, functions, JIDs, durations
// and outcomes; the stream logs connections and gaps. Credentials, returned
// data, event tags and event data are never logged: error events can carry
// passwords.
func WithLogger(l *slog.Logger) Option {
	return func(s *settings) { s.client.logger, s.event.logger = l, l }
}

// withClock replaces time.Now for NewTokenSource. It is a test knob
// (export_test.go exports it to this package's tests).
func withClock(now func() time.Time) Option { return func(s *settings) { s.now = now } }
