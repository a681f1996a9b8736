package oduflow

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/errors"

	"github.com/oduflow/oduflow-go/internal/backoff"
	"github.com/oduflow/oduflow-go/internal/errmark"
	"github.com/oduflow/oduflow-go/salt"
)

// Subscription is one connected reader of the master event bus.
type Subscription interface {
	Events() <-chan salt.Event
	Close() error
}

// EventSource opens event-bus subscriptions. Subscribe must return only once the reader is connected, so
// that a caller can subscribe before publishing (the bus has no replay). ctx bounds the connecting only:
// the subscription lives until its Close. A Dispatcher holds ONE subscription and fans returns out by JID.
type EventSource interface {
	Subscribe(ctx context.Context) (Subscription, error)
}

// SaltEvents adapts salt.SubscribeEvents to an EventSource. Only salt/job/ tags are read.
func SaltEvents(addr string, opts ...salt.EventOption) EventSource {
	return saltEventSource{addr: addr, opts: opts}
}

type saltEventSource struct {
	addr string
	opts []salt.EventOption
}

// Subscribe connects; ctx bounds the connecting only: the stream lives until Close.
func (s saltEventSource) Subscribe(ctx context.Context) (Subscription, error) {
	opts := append([]salt.EventOption{salt.WithTagPrefixes("salt/job/")}, s.opts...)
	type result struct {
		st  *salt.EventStream
		err error
	}
	ch := make(chan result, 1)
	go func() {
		st, err := salt.SubscribeEvents(context.WithoutCancel(ctx), s.addr, opts...)
		ch <- result{st, err}
	}()
	select {
	case r := <-ch:
		if r.err != nil {
			return nil, r.err
		}
		return r.st, nil
	case <-ctx.Done():
		go func() {
			if r := <-ch; r.st != nil {
				_ = r.st.Close()
			}
		}()
		return nil, ctx.Err()
	}
}

// hub shares ONE event-bus subscription among all waiters of a dispatcher and fans returns out by JID.
// Every gap of the stream (disconnect, overflow, a waiter's full buffer, the subscription ending) is
// delivered to the affected waiters so that they poll at once.
type hub struct {
	src EventSource
	log func(msg string, args ...any)
	// onGap is told the sanitized reason of every gap of the subscription (Hooks.BusGap); nil: none.
	onGap func(reason string)
	// stalledAt: when the last gap reported a stalled bus (unix ns), 0 once an event arrived since: live
	// refuses new requests for stallHold after it (then one may publish and prove the bus again).
	stalledAt atomic.Int64

	connMu sync.Mutex // serialises (re)subscription
	mu     sync.Mutex
	sub    Subscription
	gen    uint64
	closed bool
	// byJID: the waiters of each JID, a list through waiter.next (almost always one): one map entry per
	// waiting request, no per-request map. Every waiter is in it (gaps go to all of them).
	byJID   map[salt.JID]*waiter
	waiting int
	done    chan struct{}
}

type waiter struct {
	h    *hub
	jid  salt.JID
	next *waiter // the next waiter of the same JID (under hub.mu)
	rets chan *salt.JobReturn
	gaps chan struct{}
	// wake, when set (notify), is called after each return or gap put on the channels: a wait parked
	// without a goroutine (awaitLoop) learns of them this way. Under hub.mu; it must not block.
	wake func()
}

// notify sets (or, with nil, clears) the function called after each return or gap for w.
func (w *waiter) notify(f func()) {
	w.h.mu.Lock()
	w.wake = f
	w.h.mu.Unlock()
}

// waiterReturns is how many returns of its JID a waiter buffers; more is a gap (the waiter polls).
const waiterReturns = 8

func newHub(src EventSource, log func(string, ...any)) *hub {
	return &hub{src: src, log: log, byJID: make(map[salt.JID]*waiter), done: make(chan struct{})}
}

// ensure returns once a subscription is connected.
func (h *hub) ensure(ctx context.Context) error {
	h.mu.Lock()
	ok, closed := h.sub != nil, h.closed
	h.mu.Unlock()
	if closed {
		return errClosed
	}
	if ok {
		return nil
	}
	h.connMu.Lock()
	defer h.connMu.Unlock()
	h.mu.Lock()
	ok = h.sub != nil
	h.mu.Unlock()
	if ok {
		return nil
	}
	sub, err := h.src.Subscribe(ctx)
	if err != nil {
		return errmark.Mark(errors.Wrap(err, "oduflow: subscribe to event bus"), errEventBus, ErrNotReady)
	}
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		_ = sub.Close()
		return errClosed
	}
	h.sub = sub
	h.gen++
	gen := h.gen
	h.mu.Unlock()
	go h.loop(sub, gen)
	return nil
}

// connectionReporter is implemented by a Subscription that knows whether its connection is open now
// (*salt.EventStream: Connected). One without it is live while it exists.
type connectionReporter interface {
	Connected() bool
}

// live reports whether the subscription is connected now: subscribed (ensure) and, when the
// subscription can tell, its connection open rather than being re-established. A readiness check: a
// worker's watch does not need it (a reconnection is a gap, and the worker polls).
func (h *hub) live(ctx context.Context) error {
	if err := h.ensure(ctx); err != nil {
		return err
	}
	h.mu.Lock()
	sub := h.sub
	h.mu.Unlock()
	if cr, ok := sub.(connectionReporter); ok && !cr.Connected() {
		return errmark.Mark(errors.New("oduflow: event bus disconnected (reconnecting)"), errEventBus, ErrNotReady)
	}
	if sub == nil {
		return errmark.Mark(errors.New("oduflow: event bus subscription ended"), errEventBus, ErrNotReady)
	}
	if h.isStalled() {
		return errmark.Mark(errors.New("oduflow: event bus stalled (connected, nothing arrives)"), errEventBus, ErrNotReady)
	}
	return nil
}

func (h *hub) loop(sub Subscription, gen uint64) {
	for ev := range sub.Events() {
		if ev.Gap == nil {
			h.stalledAt.Store(0) // the bus delivers again
		}
		switch {
		case ev.JobReturn != nil:
			if ev.JobReturn != nil {
				h.deliver(ev.JobReturn)
			}
		case ev.Gap != nil:
			h.gapSeen(ev.Gap)
			h.gapAll()
		}
	}
	// The stream ended: drop it, tell every waiter (they poll), and resubscribe if anyone is waiting.
	h.mu.Lock()
	if h.gen == gen {
		h.sub = nil
	}
	closed := h.closed
	waiting := h.waiting > 0
	h.mu.Unlock()
	_ = sub.Close()
	h.gapAll()
	if closed {
		return
	}
	if waiting {
		h.log("event bus subscription ended; resubscribing")
		go h.resubscribe()
	}
}

// gapSeen reports a gap of the subscription by its sanitized reason; a stalled bus is also logged with
// what to do (the master's publisher is blocked: nothing, returns included, arrives meanwhile).
func (h *hub) gapSeen(g *salt.Gap) {
	reason := busGapOther
	switch {
	case errors.Is(g.Err, salt.ErrBusStalled):
		reason = busGapStalled
		h.stalledAt.Store(time.Now().UnixNano())
		h.log("event bus stalled: connected, but nothing arrived after an acknowledged publish; " +
			"the master's event publisher is blocked (a subscriber that stopped reading?): waiting requests " +
			"poll, and end unknown if it lasts")
	case strings.Contains(g.Reason, "disconnected"):
		reason = busGapDisconnected
	}
	if h.onGap != nil {
		h.onGap(reason)
	}
}

// isStalled reports whether a "bus stalled" gap came less than stallHold ago and no event since.
func (h *hub) isStalled() bool {
	at := h.stalledAt.Load()
	return at != 0 && time.Since(time.Unix(0, at)) < stallHold
}

// stallHold is how long after a "bus stalled" gap new requests are refused (ErrNotReady) unless an event
// arrives meanwhile. Bounded: on a quiet bus only a new publish can prove it delivers again.
const stallHold = 30 * time.Second

// eventExpecter is implemented by a Subscription that can report a stalled bus (*salt.EventStream:
// ExpectEvents).
type eventExpecter interface {
	ExpectEvents(within time.Duration)
}

// expectEvents tells the subscription that an event should arrive within d (a publish the master just
// acknowledged): nothing at all by then is a "bus stalled" gap.
func (h *hub) expectEvents(d time.Duration) {
	h.mu.Lock()
	sub := h.sub
	h.mu.Unlock()
	if ee, ok := sub.(eventExpecter); ok {
		ee.ExpectEvents(d)
	}
}

func (h *hub) resubscribe() {
	bo := backoff.New(100*time.Millisecond, 5*time.Second) // the same backoff as salt's event stream
	for {
		h.mu.Lock()
		stop := h.closed || h.waiting == 0 || h.sub != nil
		h.mu.Unlock()
		if stop {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		err := h.ensure(ctx)
		cancel()
		if err == nil {
			h.gapAll() // anything may have been missed while unsubscribed
			return
		}
		select {
		case <-h.done:
			return
		case <-time.After(bo.Next()):
		}
	}
}

func (h *hub) deliver(r *salt.JobReturn) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for w := h.byJID[r.JID]; w != nil; w = w.next {
		select {
		case w.rets <- r:
		default:
			signal(w.gaps) // buffer full: treat as a gap, the waiter polls
		}
		if w.wake != nil {
			w.wake()
		}
	}
}

func (h *hub) gapAll() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, first := range h.byJID {
		for w := first; w != nil; w = w.next {
			signal(w.gaps)
			if w.wake != nil {
				w.wake()
			}
		}
	}
}

func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// watch registers interest in returns of jid. It returns only when the hub is subscribed, so a publish
// made afterwards cannot be missed without a gap being reported.
func (h *hub) watch(ctx context.Context, jid salt.JID) (*waiter, error) {
	return h.watchN(ctx, jid, waiterReturns)
}

// watchN is watch with room for n returns (a publication to n minions).
func (h *hub) watchN(ctx context.Context, jid salt.JID, n int) (*waiter, error) {
	w := &waiter{h: h, jid: jid, rets: make(chan *salt.JobReturn, max(n, waiterReturns)), gaps: make(chan struct{}, 1)}
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil, errClosed
	}
	w.next = h.byJID[jid]
	h.byJID[jid] = w
	h.waiting++
	h.mu.Unlock()
	if err := h.ensure(ctx); err != nil {
		w.close()
		return nil, err
	}
	return w, nil
}

func (w *waiter) close() {
	h := w.h
	h.mu.Lock()
	defer h.mu.Unlock()
	for p, cur := (*waiter)(nil), h.byJID[w.jid]; cur != nil; p, cur = cur, cur.next {
		if cur != w {
			continue
		}
		switch {
		case p != nil:
			p.next = cur.next
		case cur.next != nil:
			h.byJID[w.jid] = cur.next
		default:
			delete(h.byJID, w.jid)
		}
		h.waiting--
		return
	}
}

func (h *hub) close() {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return
	}
	h.closed = true
	sub := h.sub
	h.sub = nil
	close(h.done)
	h.mu.Unlock()
	if sub != nil {
		_ = sub.Close()
	}
}
