package salt

import (
	"bufio"
	"context"
	"io"
	"log/slog"
	"math"
	"net"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/cockroachdb/errors"

	"github.com/oduflow/oduflow-go/internal/backoff"
	"github.com/oduflow/oduflow-go/internal/errmark"
)

// Event stream defaults.
const (
	defaultEventBuffer      = 1024
	defaultMaxFrameBytes    = 16 << 20
	defaultEventBufferBytes = 24 << 20
	defaultFrameTimeout     = 5 * time.Second
	defaultBackoffMin       = 100 * time.Millisecond
	defaultBackoffMax       = 5 * time.Second
	readBufferBytes         = 64 << 10
	gapReasonDisconnected   = "disconnected"
	gapReasonReconnected    = "reconnected"
	gapReasonOverflow       = "consumer too slow"
	gapReasonUndecodable    = "undecodable event"
	gapReasonFrameTimeout   = "event frame not completed in time"
)

// errFrameTimeout: an event frame had started but did not complete within
// WithFrameTimeout; the connection is dropped (a Gap whose Err is this).
var errFrameTimeout = errors.New("salt: event frame not completed in time")

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
func WithTagPrefixes(prefixes ...string) Option {
	return eventOption(func(c *eventConfig) { c.prefixes = append(c.prefixes, prefixes...) })
}

// WithEventBuffer bounds the events held for a slow consumer of
// SubscribeEvents: at most events of them (default 1024) and at most bytes of
// memory (default 24 MiB); zero keeps a default. Beyond either, events are
// dropped and counted in the next Gap. An event counts its frame's bytes (its
// strings alias them) plus the decode estimate of its values (see Limits), not
// its wire size alone: an event of empty arrays is small on the wire and large
// in memory.
func WithEventBuffer(events int, bytes int64) Option {
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
func WithFrameTimeout(d time.Duration) Option {
	return eventOption(func(c *eventConfig) { c.frameTime = d })
}

// WithReconnectBackoff sets the reconnection backoff bounds (default 100 ms
// to 5 s, exponential with jitter).
func WithReconnectBackoff(lo, hi time.Duration) Option {
	return eventOption(func(c *eventConfig) { c.backoffMin, c.backoffMax = lo, hi })
}

// WithEventDialer replaces the dialer used for the first connection and every reconnection
// (default: a net.Dialer). Useful to pin a source address, to wrap the connection for
// accounting, or in benchmarks to open the connection before the load is fired.
func WithEventDialer(dial func(ctx context.Context, network, address string) (net.Conn, error)) Option {
	return eventOption(func(c *eventConfig) { c.dial = dial })
}

// EventStream reads the master event bus and reconnects by itself.
type EventStream struct {
	cfg     eventConfig
	network string
	address string
	out     chan Event
	q       *eventQueue
	ctx     context.Context
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	once    sync.Once
}

func parseEventAddr(addr string) (network, address string, err error) {
	switch {
	case strings.HasPrefix(addr, "unix://"):
		address, network = strings.TrimPrefix(addr, "unix://"), "unix"
	case strings.HasPrefix(addr, "ipc://"):
		address, network = strings.TrimPrefix(addr, "ipc://"), "unix"
	case strings.HasPrefix(addr, "tcp://"):
		address, network = strings.TrimPrefix(addr, "tcp://"), "tcp"
		if _, _, e := net.SplitHostPort(address); e != nil {
			return "", "", errors.Wrapf(ErrInvalidRequest, "bad event bus address %q", addr)
		}
	default:
		return "", "", errors.Wrapf(ErrInvalidRequest, "unsupported event bus address %q (want unix:// or tcp://)", addr)
	}
	if address == "" {
		return "", "", errors.Wrapf(ErrInvalidRequest, "bad event bus address %q", addr)
	}
	return network, address, nil
}

// SubscribeEvents connects to the master event bus at addr
// ("unix:///var/run/salt/master/master_event_pub.ipc" or
// "tcp://127.0.0.1:4512") and returns once the first connection is up, so
// that a caller can subscribe before it publishes. The first connection
// failing (missing socket, permission denied) is returned as an error; later
// disconnections are retried with backoff, each reported as a Gap. The stream
// ends when ctx is done or Close is called; Events is then closed.
func SubscribeEvents(ctx context.Context, addr string, opts ...Option) (*EventStream, error) {
	set := settings{event: eventConfig{buffer: defaultEventBuffer, bufBytes: defaultEventBufferBytes, maxFrame: defaultMaxFrameBytes,
		frameTime: defaultFrameTimeout, decode: defaultEventDecodeLimits(),
		backoffMin: defaultBackoffMin, backoffMax: defaultBackoffMax}}
	applyOptions(&set, opts)
	cfg := set.event
	maxFrame := int64(cfg.maxFrame)
	set.limits.applyTo(&maxFrame, &cfg.decode)
	if maxFrame > math.MaxInt32 {
		maxFrame = math.MaxInt32 // a frame length is at most 4 bytes on the wire
	}
	cfg.maxFrame = int(maxFrame)
	if cfg.buffer < 1 || cfg.bufBytes < 1 || cfg.maxFrame < 16 || cfg.frameTime <= 0 || !cfg.decode.valid() || cfg.backoffMin <= 0 || cfg.backoffMax < cfg.backoffMin {
		return nil, errors.Wrap(ErrInvalidRequest, "invalid event stream options")
	}
	if cfg.logger == nil {
		cfg.logger = slog.New(slog.DiscardHandler)
	}
	if cfg.dial == nil {
		var d net.Dialer
		cfg.dial = d.DialContext
	}
	network, address, err := parseEventAddr(addr)
	if err != nil {
		return nil, err
	}
	conn, err := cfg.dial(ctx, network, address)
	if err != nil {
		return nil, errors.Wrapf(err, "salt: connecting to event bus %s", errors.Safe(addr))
	}
	sctx, cancel := context.WithCancel(ctx)
	s := &EventStream{cfg: cfg, network: network, address: address, out: make(chan Event),
		q: newEventQueue(cfg.buffer, cfg.bufBytes), ctx: sctx, cancel: cancel}
	s.wg.Add(2)
	go s.run(conn)
	go s.deliver()
	go func() {
		s.wg.Wait()
		close(s.out)
	}()
	return s, nil
}

// Events returns the event channel. It is closed after Close (or when the
// context given to SubscribeEvents is done).
func (s *EventStream) Events() <-chan Event { return s.out }

// Close stops the stream and waits for its goroutines.
func (s *EventStream) Close() error {
	s.once.Do(s.cancel)
	s.wg.Wait()
	return nil
}

// run owns the connection: read until error, report a gap, reconnect.
func (s *EventStream) run(conn net.Conn) {
	defer s.wg.Done()
	bo := backoff.New(s.cfg.backoffMin, s.cfg.backoffMax)
	for {
		err := s.readConn(conn)
		if s.ctx.Err() != nil {
			return
		}
		s.cfg.logger.Warn("salt event bus disconnected", slog.String("error", errors.Redact(err)))
		reason := gapReasonDisconnected
		if errors.Is(err, errFrameTimeout) {
			reason = gapReasonFrameTimeout
		}
		s.q.addGapErr(reason, 0, err)
		for {
			if !bo.Wait(s.ctx) {
				return
			}
			c, err := s.cfg.dial(s.ctx, s.network, s.address)
			if err == nil {
				conn = c
				break
			}
			s.cfg.logger.Debug("salt event bus reconnect failed", slog.String("error", errors.Redact(err)))
		}
		bo.Reset()
		s.cfg.logger.Info("salt event bus reconnected")
		s.q.addGapErr(gapReasonReconnected, 0, nil)
	}
}

// readConn reads frames from one connection until it fails. The framing is
// detected again on every connection. The connection is never written to
// nor half-closed (Salt's publisher drops such readers).
//
// Every byte is hostile (any minion can fire any event): a frame is capped
// (Limits.MaxMessageBytes), must complete within WithFrameTimeout once its first
// byte arrived, its tag is filtered before its data is decoded, and its data is
// decoded within its Limits.
func (s *EventStream) readConn(conn net.Conn) error {
	defer conn.Close()
	stop := context.AfterFunc(s.ctx, func() { _ = conn.Close() })
	defer stop()
	fr := &frameReader{br: bufio.NewReaderSize(conn, readBufferBytes), max: s.cfg.maxFrame}
	bud := new(decodeBudget) // reset for every frame; no event retains it
	armed := false
	var armedAt time.Time
	for {
		if fr.br.Buffered() == 0 {
			// idle: wait for the next frame's first byte as long as it takes. The
			// last frame's deadline stays armed while it lasts (clearing it and
			// arming it again on every catch-up with the publisher were two timer
			// updates per read): when it expires with no byte buffered, the bus is
			// merely idle, and the wait goes on without a deadline.
			if _, err := fr.br.Peek(1); err != nil {
				var ne net.Error
				if armed && fr.br.Buffered() == 0 && errors.As(err, &ne) && ne.Timeout() && s.ctx.Err() == nil {
					_ = conn.SetReadDeadline(time.Time{})
					armed = false
					continue
				}
				if err == io.EOF {
					return errors.New("event bus closed the connection")
				}
				return err
			}
		}
		// a frame has started: it must complete in time. Frames already
		// buffered back to back share one deadline while it leaves each at
		// least 3/4 of the timeout (re-arming costs a timer update per frame).
		if now := time.Now(); !armed || now.Sub(armedAt) > s.cfg.frameTime/4 {
			_ = conn.SetReadDeadline(now.Add(s.cfg.frameTime))
			armed, armedAt = true, now
		}
		// frame may be a slice of fr's buffer (shared): it is decoded (into
		// values that do not alias it) before the next read
		frame, shared, err := fr.nextShared()
		if err != nil {
			if err == io.EOF {
				return errors.New("event bus closed the connection")
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() && s.ctx.Err() == nil {
				return errors.Wrapf(errmark.Mark(err, errFrameTimeout), "no complete frame within %s", errors.Safe(s.cfg.frameTime))
			}
			return err
		}
		if !s.handleFrame(frame, shared, fr.framing, bud) && !shared {
			fr.recycle(frame)
		}
	}
}

// handleFrame filters one frame by its tag, then decodes and queues it. It
// reports whether the queued event references frame (else frame is free).
func (s *EventStream) handleFrame(frame []byte, shared bool, framing frameFormat, bud *decodeBudget) bool {
	if len(frame) == 0 {
		return false // no frame reader returns one; decodeEventFrame would refuse it
	}
	// view is the frame's text without a copy. A shared frame is the read
	// buffer: the view is read only here, for the tag, and never retained. An
	// owned frame (read into its own slice, never written again) becomes the
	// event's text itself, so that a frame at the cap is not copied once more.
	view := unsafe.String(unsafe.SliceData(frame), len(frame))
	bud.reset(s.cfg.decode)
	sp, split := (&strDecoder{s: view, bud: bud}).splitEventFrame()
	if split && !s.match(view[sp.tagLo:sp.tagHi]) {
		return false // not decoded at all
	}
	text := view
	if shared {
		text = string(frame)
	}
	var ev Event
	var est int64
	var err error
	decoded := false
	if split {
		var over bool
		ev, est, decoded, over = decodeEventData(text, sp, bud, s.cfg.decode)
		if over {
			err = budgetError("event frame too costly to decode")
		}
	}
	if !decoded && err == nil {
		// the canonical error (or, should the fast path ever refuse a valid frame, the event)
		ev, est, err = decodeEventText(text, frame, s.cfg.decode)
	}
	if err != nil {
		s.cfg.logger.Warn("salt event undecodable", slog.String("framing", framing.String()), slog.String("error", errors.Redact(err)))
		s.q.addGapErr(gapReasonUndecodable, 1, err) // errors never quote the frame
		return false
	}
	if !s.match(ev.Tag) {
		return false
	}
	if s.q.idle() {
		// nothing queued, pending or held by deliver: a consumer already waiting
		// takes the event from this goroutine directly (one hand-off instead of
		// two). Only this goroutine adds events and gaps, so the order holds.
		select {
		case s.out <- ev:
			return true
		default:
		}
	}
	return s.q.push(ev, int64(len(frame))+est)
}

func (s *EventStream) match(tag string) bool {
	if len(s.cfg.prefixes) == 0 {
		return true
	}
	for _, p := range s.cfg.prefixes {
		if strings.HasPrefix(tag, p) {
			return true
		}
	}
	return false
}

// deliver moves events from the bounded queue to the consumer.
func (s *EventStream) deliver() {
	defer s.wg.Done()
	for {
		ev, ok := s.q.pop()
		if !ok {
			select {
			case <-s.q.notify:
				continue
			case <-s.ctx.Done():
				return
			}
		}
		select {
		case s.out <- ev:
			s.q.handed()
		case <-s.ctx.Done():
			return
		}
	}
}

// eventQueue is a bounded FIFO of events plus at most one pending gap that
// sits after its last element. When full, new events are dropped and counted
// in that gap; the gap is delivered as soon as the consumer catches up, before
// any later event. Memory is bounded by the capacity.
type eventQueue struct {
	mu       sync.Mutex
	buf      []Event
	sizes    []int64
	head     int
	n        int
	bytes    int64 // frame bytes plus decode estimates of the queued events and of held
	held     int64 // the part of bytes of the event popped but not yet handed to the consumer
	maxBytes int64
	gap      *Gap
	notify   chan struct{}
}

func newEventQueue(capacity int, maxBytes int64) *eventQueue {
	return &eventQueue{buf: make([]Event, capacity+1), sizes: make([]int64, capacity+1),
		maxBytes: maxBytes, notify: make(chan struct{}, 1)}
}

func (q *eventQueue) signal() {
	select {
	case q.notify <- struct{}{}:
	default:
	}
}

func (q *eventQueue) appendLocked(ev Event, size int64) {
	i := (q.head + q.n) % len(q.buf)
	q.buf[i], q.sizes[i] = ev, size
	q.bytes += size
	q.n++
}

// push adds an event of the given size (frame bytes plus decode estimate), or
// drops it when the queue is full (count or bytes).
func (q *eventQueue) push(ev Event, size int64) (queued bool) {
	q.mu.Lock()
	free := len(q.buf) - q.n
	if (q.n > 0 || q.held > 0) && q.bytes+size > q.maxBytes {
		free = 0 // over the byte budget: treat as full (one event always fits)
	}
	switch {
	case q.gap != nil && free >= 2:
		q.appendLocked(Event{Gap: q.gap}, 0)
		q.gap = nil
		q.appendLocked(ev, size)
		queued = true
	case q.gap != nil:
		q.gap.Dropped++
		if !strings.Contains(q.gap.Reason, gapReasonOverflow) {
			q.gap.Reason += "; " + gapReasonOverflow
		}
	case free >= 2: // keep one slot for a gap
		q.appendLocked(ev, size)
		queued = true
	default:
		q.gap = &Gap{Reason: gapReasonOverflow, Dropped: 1}
	}
	q.mu.Unlock()
	q.signal()
	return queued
}

// addGapErr records a gap for reason, with dropped events and its cause err
// (nil for none); a pending gap keeps the first cause.
func (q *eventQueue) addGapErr(reason string, dropped int, err error) {
	q.mu.Lock()
	if q.gap == nil {
		q.gap = &Gap{Reason: reason}
	} else if !strings.Contains(q.gap.Reason, reason) {
		q.gap.Reason += "; " + reason
	}
	if q.gap.Err == nil {
		q.gap.Err = err
	}
	q.gap.Dropped += dropped
	q.mu.Unlock()
	q.signal()
}

// pop removes the oldest event, or the pending gap when no event is queued.
// The event still counts against the byte budget until handed is called: the
// event waiting for the consumer holds its memory as much as a queued one.
func (q *eventQueue) pop() (Event, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.n > 0 {
		ev := q.buf[q.head]
		q.held += q.sizes[q.head]
		q.buf[q.head], q.sizes[q.head] = Event{}, 0
		q.head = (q.head + 1) % len(q.buf)
		q.n--
		return ev, true
	}
	if q.gap != nil {
		g := q.gap
		q.gap = nil
		return Event{Gap: g}, true
	}
	return Event{}, false
}

// idle reports whether no event is queued or waiting for the consumer and no gap
// is pending.
func (q *eventQueue) idle() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.n == 0 && q.held == 0 && q.gap == nil
}

// handed releases the budget of the events popped so far: the consumer has them.
func (q *eventQueue) handed() {
	q.mu.Lock()
	q.bytes -= q.held
	q.held = 0
	q.mu.Unlock()
}
