package salt

import (
	"context"
	"log/slog"
	"net"
	"time"
)

// The options are typed per constructor, so that an option a constructor does not read is a compile
// error rather than silently ignored:
//
//   - ClientOption configures NewClient: WithAuth, WithRequestTimeout, WithConnectionReuse,
//     WithEnvelopeVersion, WithOSUser;
//   - EventOption configures SubscribeEvents: WithTagPrefixes, WithEventBuffer, WithFrameTimeout,
//     WithReconnectBackoff, WithEventDialer;
//   - CommonOption configures both (each with its own defaults): WithLogger, WithLimits;
//   - TokenOption configures NewTokenSource: WithRenewBefore.

// ClientOption configures NewClient.
type ClientOption interface{ applyClient(*settings) }

// EventOption configures SubscribeEvents.
type EventOption interface{ applyEvents(*settings) }

// TokenOption configures NewTokenSource.
type TokenOption interface{ applyToken(*settings) }

// CommonOption configures NewClient and SubscribeEvents alike: it is a ClientOption and an EventOption.
type CommonOption func(*settings)

func (o CommonOption) applyClient(s *settings) { o(s) }
func (o CommonOption) applyEvents(s *settings) { o(s) }

type clientOpt func(*settings)

func (o clientOpt) applyClient(s *settings) { o(s) }

type eventOpt func(*settings)

func (o eventOpt) applyEvents(s *settings) { o(s) }

type tokenOpt func(*settings)

func (o tokenOpt) applyToken(s *settings) { o(s) }

// settings collects every option; each constructor reads its own part.
type settings struct {
	client      clientConfig
	event       eventConfig
	limits      Limits
	renewBefore time.Duration    // NewTokenSource; 0 = default
	now         func() time.Time // NewTokenSource (tests)
}

func clientOption(f func(*clientConfig)) ClientOption {
	return clientOpt(func(s *settings) { f(&s.client) })
}

func eventOption(f func(*eventConfig)) EventOption {
	return eventOpt(func(s *settings) { f(&s.event) })
}

func applyClientOptions(s *settings, opts []ClientOption) {
	for _, o := range opts {
		if o != nil {
			o.applyClient(s)
		}
	}
}

func applyEventOptions(s *settings, opts []EventOption) {
	for _, o := range opts {
		if o != nil {
			o.applyEvents(s)
		}
	}
}

func applyTokenOptions(s *settings, opts []TokenOption) {
	for _, o := range opts {
		if o != nil {
			o.applyToken(s)
		}
	}
}

// Options of NewClient.

type clientConfig struct {
	auth      Auth
	timeout   time.Duration
	maxReply  int64
	decode    decodeLimits
	reuse     bool
	version   int
	logger    *slog.Logger
	osUser    string
	osUserSet bool
}

// WithAuth sets the credentials used by Publish, Runner and Wheel.
func WithAuth(a Auth) ClientOption { return clientOption(func(c *clientConfig) { c.auth = a }) }

// WithRequestTimeout bounds every request (dial to reply). Default 60 s. The
// master has no request timeout of its own: a publish that timed out here may
// still be executed later (ErrOutcomeUnknown).
func WithRequestTimeout(d time.Duration) ClientOption {
	return clientOption(func(c *clientConfig) { c.timeout = d })
}

// WithEnvelopeVersion sets the envelope "version" field. Default 3: every Salt
// run here (3006.0 to the 3008 line) accepts it, and a master with
// minimum_auth_version 3 (release notes of 3006.17+) replies "bad load" to
// anything lower. Use 2 only to reproduce old captures byte for byte.
func WithEnvelopeVersion(v int) ClientOption {
	return clientOption(func(c *clientConfig) { c.version = v })
}

// WithOSUser sets the "user" field sent with eauth and token publishes (Salt
// checks it against publisher_acl_blacklist and then replaces it with the
// authenticated name). Default: the current OS user.
func WithOSUser(name string) ClientOption {
	return clientOption(func(c *clientConfig) { c.osUser, c.osUserSet = name, true })
}

// WithConnectionReuse keeps up to 32 idle connections to the master for later requests (default:
// a fresh connection per request). A connection is reused only after a complete exchange and
// only once a ZMTP PING on it was answered by PONG right before the request; it is discarded on
// any error, timeout or doubt. Failures keep their meaning: ErrNotSent when nothing was sent,
// ErrOutcomeUnknown when a sent request got no reply; nothing is resent.
func WithConnectionReuse() ClientOption {
	return clientOption(func(c *clientConfig) { c.reuse = true })
}

// Options of SubscribeEvents.

type eventConfig struct {
	prefixes   []string
	buffer     int
	bufBytes   int64
	maxFrame   int
	frameTime  time.Duration
	decode     decodeLimits
	backoffMin time.Duration
	backoffMax time.Duration
	logger     *slog.Logger
	dial       func(ctx context.Context, network, address string) (net.Conn, error)
}

// WithTagPrefixes delivers only events whose tag starts with one of the
// prefixes (gaps are always delivered). Match "salt/job/<jid>/" with the
// trailing slash, not "salt/job/<jid>".
func WithTagPrefixes(prefixes ...string) EventOption {
	return eventOption(func(c *eventConfig) { c.prefixes = append(c.prefixes, prefixes...) })
}

// WithEventBuffer bounds the events held for a slow consumer of
// SubscribeEvents: at most events of them (default 1024) and at most bytes of
// memory (default 24 MiB); zero keeps a default. Beyond either, events are
// dropped and counted in the next Gap. An event counts its frame's bytes (its
// strings alias them) plus the decode estimate of its values (see Limits), not
// its wire size alone: an event of empty arrays is small on the wire and large
// in memory.
func WithEventBuffer(events int, bytes int64) EventOption {
	return eventOption(func(c *eventConfig) {
		if events != 0 {
			c.buffer = events
		}
		if bytes != 0 {
			c.bufBytes = bytes
		}
	})
}

// WithFrameTimeout bounds how long a frame that has started may take to
// arrive completely (default 5 s; a frame gets at least 3/4 of it). A frame still incomplete then drops the
// connection (a Gap, then a reconnection): a peer that sends half a frame and
// stops must not stall the stream silently. An idle bus (no byte at all) is
// never timed out.
func WithFrameTimeout(d time.Duration) EventOption {
	return eventOption(func(c *eventConfig) { c.frameTime = d })
}

// WithReconnectBackoff sets the reconnection backoff bounds (default 100 ms
// to 5 s, exponential with jitter).
func WithReconnectBackoff(lo, hi time.Duration) EventOption {
	return eventOption(func(c *eventConfig) { c.backoffMin, c.backoffMax = lo, hi })
}

// WithEventDialer replaces the dialer used for the first connection and every reconnection
// (default: a net.Dialer). Useful to pin a source address, to wrap the connection for
// accounting, or in benchmarks to open the connection before the load is fired.
func WithEventDialer(dial func(ctx context.Context, network, address string) (net.Conn, error)) EventOption {
	return eventOption(func(c *eventConfig) { c.dial = dial })
}

// Options of NewTokenSource.

// WithRenewBefore makes NewTokenSource's source renew the token when less
// than d of its lifetime is left (default 5 minutes, at most half the token's
// lifetime).
func WithRenewBefore(d time.Duration) TokenOption {
	return tokenOpt(func(s *settings) { s.renewBefore = d })
}

// Options of both NewClient and SubscribeEvents.

// WithLimits sets the limits of a Client's replies or of an event stream's
// frames (NewClient, SubscribeEvents). Non-zero fields of later WithLimits
// options override earlier ones.
func WithLimits(l Limits) CommonOption {
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

// WithLogger sets the structured logger of a Client or an event stream
// (default: discard). The client logs commands, functions, JIDs, durations
// and outcomes; the stream logs connections and gaps. Credentials, returned
// data, event tags and event data are never logged: error events can carry
// passwords.
func WithLogger(l *slog.Logger) CommonOption {
	return func(s *settings) { s.client.logger, s.event.logger = l, l }
}

// withClock replaces time.Now for NewTokenSource. It is a test knob
// (export_test.go exports it to this package's tests).
func withClock(now func() time.Time) TokenOption { return tokenOpt(func(s *settings) { s.now = now }) }
