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
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/cockroachdb/errors"

	"github.com/oduflow/oduflow-go/internal/backoff"
	"github.com/oduflow/oduflow-go/internal/errmark"
	"github.com/oduflow/oduflow-go/internal/saltwire"
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
)

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
	// connected: a connection to the bus is open (cleared when it fails, set again on reconnection).
	connected atomic.Bool
	// frames counts the frames read (any tag, before filtering): ExpectEvents' proof of life.
	frames atomic.Uint64
	// expect is ExpectEvents' one watchdog.
	expect stallWatch
}

// stallWatch is ExpectEvents' single watchdog: at most one timer armed at a time, whatever the number of
// expectations.
type stallWatch struct {
	mu      sync.Mutex
	armed   bool
	again   bool // another expectation came while armed: re-arm once the timer fires
	from    uint64
	within  time.Duration
	stalled bool // the last watch reported a stall: report again only after a frame arrived
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
// failing (missing socket, permission denied) is returned as an error (a
// permission error is an *EventBusPermissionError naming the socket's mode
// and owner: errors.Is(err, ErrEventBusPermission)); later
// disconnections are retried with backoff, each reported as a Gap. The stream
// ends when ctx is done or Close is called; Events is then closed.
func SubscribeEvents(ctx context.Context, addr string, opts ...EventOption) (_ *EventStream, err error) {
	defer errmark.Boundary(&err)
	set := settings{event: eventConfig{buffer: defaultEventBuffer, bufBytes: defaultEventBufferBytes, maxFrame: defaultMaxFrameBytes,
		frameTime: defaultFrameTimeout, decode: defaultEventDecodeLimits(),
		backoffMin: defaultBackoffMin, backoffMax: defaultBackoffMax}}
	applyEventOptions(&set, opts)
	cfg := set.event
	maxFrame := int64(cfg.maxFrame)
	set.limits.applyTo(&maxFrame, &cfg.decode)
	if maxFrame > math.MaxInt32 {
		maxFrame = math.MaxInt32 // a frame length is at most 4 bytes on the wire
	}
	cfg.maxFrame = int(maxFrame)
	if cfg.buffer < 1 || cfg.bufBytes < 1 || cfg.maxFrame < 16 || cfg.frameTime <= 0 || !cfg.decode.Valid() || cfg.backoffMin <= 0 || cfg.backoffMax < cfg.backoffMin {
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
		return nil, errors.Wrapf(eventBusDialError(network, address, err), "salt: connecting to event bus %s", errors.Safe(addr))
	}
	sctx, cancel := context.WithCancel(ctx)
	s := &EventStream{cfg: cfg, network: network, address: address, out: make(chan Event),
		q: newEventQueue(cfg.buffer, cfg.bufBytes), ctx: sctx, cancel: cancel}
	s.connected.Store(true)
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

// Connected reports whether the stream holds an open connection to the bus now: false from a
// disconnection (reported as a Gap) until the reconnection, and after Close. It reads one atomic flag:
// a readiness check costs nothing. An open connection proves the socket, not that the master's
// publisher is writing to it (see the "bus stalled" Gap).
func (s *EventStream) Connected() bool { return s.connected.Load() && s.ctx.Err() == nil }

// ExpectEvents tells the stream that at least one event (any tag, before the
// tag filter) should arrive within d from now: a publish the master
// acknowledged, for instance, makes it fire salt/job/<jid>/new. When nothing
// at all has arrived by then while the connection is open, the stream
// delivers a Gap whose Reason is "bus stalled" and whose Err is ErrBusStalled,
// once per stall (again only after a frame has arrived since). One timer
// serves any number of calls; an expectation made while it is armed re-arms
// it when it fires. d <= 0 does nothing.
func (s *EventStream) ExpectEvents(d time.Duration) {
	if d <= 0 || s.ctx.Err() != nil {
		return
	}
	w := &s.expect
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.armed {
		w.again, w.within = true, max(w.within, d)
		return
	}
	w.armed, w.from, w.within = true, s.frames.Load(), d
	time.AfterFunc(d, s.checkStall)
}

// checkStall is the watchdog's timer: a gap when no frame arrived since it was armed.
func (s *EventStream) checkStall() {
	w := &s.expect
	w.mu.Lock()
	now := s.frames.Load()
	stalled := now == w.from && s.connected.Load() && s.ctx.Err() == nil
	report := stalled && !w.stalled
	if now != w.from {
		w.stalled = false
	}
	if stalled {
		w.stalled = true
	}
	w.armed = false
	if w.again && s.ctx.Err() == nil {
		w.again, w.armed, w.from = false, true, now
		time.AfterFunc(w.within, s.checkStall)
	}
	w.mu.Unlock()
	if report {
		s.cfg.logger.Warn("salt event bus stalled: connected, but nothing arrived while events were expected")
		s.q.addGapErr(gapReasonStalled, 0, errors.WithStack(ErrBusStalled))
	}
}

// Close stops the stream and waits for its goroutines.
func (s *EventStream) Close() (err error) {
	defer errmark.Boundary(&err)
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
		s.connected.Store(false)
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
		s.connected.Store(true)
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
		if err == nil {
			s.frames.Add(1)
		}
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
	bud.Reset(s.cfg.decode)
	sp, split := saltwire.SplitEventFrame(view, bud)
	if split && !s.match(view[sp.TagLo:sp.TagHi]) {
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
	_, tag = unwrapClusterTag(tag) // prefixes select the inner tag
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
