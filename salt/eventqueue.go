package salt

import (
	"strings"
	"sync"

	"github.com/oduflow/oduflow-go/internal/errmark"
)

// eventQueue is a bounded FIFO of events plus at most one pending gap that
// sits after its last element. When full, new events are dropped and counted
// in that gap; the gap is delivered as soon as the consumer catches up, before
// any later event. Memory is bounded by the capacity. The ring starts small and
// doubles as events pile up, up to the capacity: a stream whose consumer keeps
// up (the common case) never holds the capacity's slots (16,384 events are
// 1.4 MiB), yet a burst still queues as many.
type eventQueue struct {
	mu       sync.Mutex
	buf      []Event // the ring: len(buf) slots, grown up to slots
	sizes    []int64
	slots    int // the ring's most slots: capacity + 1 (one kept for a gap)
	head     int
	n        int
	bytes    int64 // frame bytes plus decode estimates of the queued events and of held
	held     int64 // the part of bytes of the event popped but not yet handed to the consumer
	maxBytes int64
	gap      *Gap
	notify   chan struct{}
}

// initialQueueSlots is the ring's first size.
const initialQueueSlots = 64

func newEventQueue(capacity int, maxBytes int64) *eventQueue {
	first := min(capacity+1, initialQueueSlots)
	return &eventQueue{buf: make([]Event, first), sizes: make([]int64, first), slots: capacity + 1,
		maxBytes: maxBytes, notify: make(chan struct{}, 1)}
}

// grow doubles the ring (up to slots), its events in order from index 0.
func (q *eventQueue) grow() {
	size := min(2*len(q.buf), q.slots)
	buf, sizes := make([]Event, size), make([]int64, size)
	for i := range q.n {
		j := (q.head + i) % len(q.buf)
		buf[i], sizes[i] = q.buf[j], q.sizes[j]
	}
	q.buf, q.sizes, q.head = buf, sizes, 0
}

func (q *eventQueue) signal() {
	select {
	case q.notify <- struct{}{}:
	default:
	}
}

func (q *eventQueue) appendLocked(ev Event, size int64) {
	if q.n == len(q.buf) {
		q.grow() // callers leave room: q.n < q.slots
	}
	i := (q.head + q.n) % len(q.buf)
	q.buf[i], q.sizes[i] = ev, size
	q.bytes += size
	q.n++
}

// push adds an event of the given size (frame bytes plus decode estimate), or
// drops it when the queue is full (count or bytes).
func (q *eventQueue) push(ev Event, size int64) (queued bool) {
	q.mu.Lock()
	free := q.slots - q.n
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
		q.gap.Err = errmark.OneLine(err) // a consumer logs it: one line, no stack
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
