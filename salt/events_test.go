package salt

import (
	"bytes"
	"context"
	"encoding/binary"
	"net"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/oduflow/oduflow-go/internal/testwait"
	"github.com/vmihailenco/msgpack/v5"
)

// busPublisher imitates the master's event publisher: every frame is written
// to every connected reader.
type busPublisher struct {
	t       *testing.T
	ln      net.Listener
	mu      sync.Mutex
	conns   []net.Conn
	framing frameFormat
	joined  chan struct{}
}

func startBus(t *testing.T, network string, framing frameFormat) (*busPublisher, string) {
	t.Helper()
	var ln net.Listener
	var err error
	var addr string
	if network == "unix" {
		p := filepath.Join(t.TempDir(), "master_event_pub.ipc")
		ln, err = net.Listen("unix", p)
		addr = "unix://" + p
	} else {
		ln, err = net.Listen("tcp", "127.0.0.1:0")
		addr = "tcp://" + ln.Addr().String()
	}
	if err != nil {
		t.Fatal(err)
	}
	b := &busPublisher{t: t, ln: ln, framing: framing, joined: make(chan struct{}, 16)}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			b.mu.Lock()
			b.conns = append(b.conns, c)
			b.mu.Unlock()
			b.joined <- struct{}{}
		}
	}()
	t.Cleanup(func() { _ = ln.Close(); b.dropAll() })
	return b, addr
}

func (b *busPublisher) setFraming(f frameFormat) { b.mu.Lock(); b.framing = f; b.mu.Unlock() }

func (b *busPublisher) send(frame []byte) {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := frame
	if b.framing == framingLengthPrefixed {
		out = binary.BigEndian.AppendUint32(nil, uint32(len(frame)))
		out = append(out, frame...)
	}
	for _, c := range b.conns {
		_, _ = c.Write(out)
	}
}

func (b *busPublisher) dropAll() {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, c := range b.conns {
		_ = c.Close()
	}
	b.conns = nil
}

// eventFrame builds {head: {}, body: bin(tag "\n\n" msgpack(data))} as Salt
// does with use_bin_type=True.
func eventFrame(t testing.TB, tag string, data map[string]any) []byte {
	t.Helper()
	d, err := msgpack.Marshal(data)
	if err != nil {
		t.Fatal(err)
	}
	body := append([]byte(tag+"\n\n"), d...)
	f, err := msgpack.Marshal(map[string]any{"head": map[string]any{}, "body": body})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func capturedFrames(t *testing.T) [][]byte {
	return readAllFrames(t, readVector(t, "eventbus/eventbus.raw"), framingBare)
}

func next(t *testing.T, s *EventStream) Event {
	t.Helper()
	select {
	case ev, ok := <-s.Events():
		if !ok {
			t.Fatal("stream closed")
		}
		return ev
	case <-time.After(5 * time.Second):
		t.Fatal("no event")
	}
	return Event{}
}

func TestEventStreamBothFramings(t *testing.T) {
	t.Parallel()
	frames := capturedFrames(t)
	for _, network := range []string{"unix", "tcp"} {
		for _, framing := range []frameFormat{framingBare, framingLengthPrefixed} {
			t.Run(network+"/"+framing.String(), func(t *testing.T) {
				bus, addr := startBus(t, network, framing)
				s, err := SubscribeEvents(context.Background(), addr)
				if err != nil {
					t.Fatal(err)
				}
				defer s.Close()
				<-bus.joined
				for _, f := range frames {
					bus.send(f)
				}
				returns, wantReturns := 0, 0
				for i, f := range frames {
					ev := next(t, s)
					want, _ := decodeEventFrame(f)
					if ev.Tag != want.Tag || ev.Kind() != want.Kind() {
						t.Fatalf("event %d: %s/%v want %s/%v", i, ev.Tag, ev.Kind(), want.Tag, want.Kind())
					}
					if ev.Kind() == EventJobReturn {
						returns++
					}
					if want.Kind() == EventJobReturn {
						wantReturns++
					}
				}
				if returns != wantReturns || returns < 15 {
					t.Fatalf("%d returns", returns)
				}
			})
		}
	}
}

func TestEventStreamFilterGapAndReconnect(t *testing.T) {
	t.Parallel()
	bus, addr := startBus(t, "unix", framingBare)
	s, err := SubscribeEvents(context.Background(), addr,
		WithTagPrefixes("salt/job/20261129154606042846/"), WithReconnectBackoff(10*time.Millisecond, 50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	<-bus.joined
	for _, f := range capturedFrames(t) {
		bus.send(f)
	}
	if ev := next(t, s); ev.Kind() != EventJobNew || ev.JobNew.JID != "20261129154606042846" {
		t.Fatalf("first %+v", ev)
	}
	if ev := next(t, s); ev.Kind() != EventJobReturn || ev.JobReturn.Return != true {
		t.Fatalf("second %+v", ev)
	}
	// the bus goes away: a gap, a reconnect (with the other framing), a gap
	bus.setFraming(framingLengthPrefixed)
	bus.dropAll()
	reasons := ""
	for {
		ev := next(t, s)
		if ev.Kind() != EventGap {
			t.Fatalf("want gaps, got %+v", ev)
		}
		reasons += ev.Gap.Reason + ";"
		if bytes.Contains([]byte(ev.Gap.Reason), []byte(gapReasonReconnected)) {
			break
		}
	}
	if !bytes.Contains([]byte(reasons), []byte(gapReasonDisconnected)) {
		t.Fatalf("reasons %q", reasons)
	}
	<-bus.joined
	bus.send(eventFrame(t, "salt/job/20261129154606042846/ret/m2", map[string]any{"return": map[int]any{1: "x"}, "retcode": 0, "success": true}))
	ev := next(t, s)
	if ev.Kind() != EventJobReturn || ev.JobReturn.MinionID != "m2" || ev.JobReturn.Return.(map[string]any)["1"] != "x" {
		t.Fatalf("after reconnect %+v", ev)
	}
	_ = s.Close()
	if _, ok := <-s.Events(); ok {
		t.Fatal("channel not closed")
	}
}

func TestEventStreamOverflowIsBoundedAndReported(t *testing.T) {
	t.Parallel()
	bus, addr := startBus(t, "unix", framingBare)
	s, err := SubscribeEvents(context.Background(), addr, WithEventBuffer(4, 0))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	<-bus.joined
	const n = 50
	for i := 0; i < n; i++ {
		bus.send(eventFrame(t, "test/ev", map[string]any{"i": i}))
	}
	// the consumer is "slow": it takes nothing until the reader has read every frame (and dropped)
	testwait.Until(t, "the reader did not read every frame", 5*time.Second, func() bool { return s.frames.Load() >= n })
	got, dropped, last := 0, 0, -1
	for got+dropped < n {
		ev := next(t, s)
		if ev.Kind() == EventGap {
			if ev.Gap.Reason != gapReasonOverflow {
				t.Fatalf("gap %+v", ev.Gap)
			}
			dropped += ev.Gap.Dropped
			continue
		}
		i := int(ev.Data["i"].(int64))
		if i <= last {
			t.Fatalf("event %d after %d", i, last)
		}
		last = i
		got++
	}
	if got > 6 || dropped < n-6 {
		t.Fatalf("got %d dropped %d: buffer not bounded", got, dropped)
	}
	bus.send(eventFrame(t, "test/after", map[string]any{}))
	if ev := next(t, s); ev.Tag != "test/after" {
		t.Fatalf("after overflow %+v", ev)
	}
}

func TestEventStreamBadFrames(t *testing.T) {
	t.Parallel()
	bus, addr := startBus(t, "unix", framingLengthPrefixed)
	s, err := SubscribeEvents(context.Background(), addr, WithMaxFrameBytes(1024),
		WithReconnectBackoff(10*time.Millisecond, 20*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	<-bus.joined
	noBody, _ := msgpack.Marshal(map[string]any{"head": map[string]any{}})
	bus.send(noBody)
	if ev := next(t, s); ev.Kind() != EventGap || ev.Gap.Reason != gapReasonUndecodable || ev.Gap.Dropped != 1 {
		t.Fatalf("undecodable %+v", ev)
	}
	bus.send(eventFrame(t, "ok/1", map[string]any{}))
	if ev := next(t, s); ev.Tag != "ok/1" {
		t.Fatalf("%+v", ev)
	}
	bus.send(eventFrame(t, "big", map[string]any{"x": string(make([]byte, 4096))}))
	if ev := next(t, s); ev.Kind() != EventGap {
		t.Fatalf("too large: %+v", ev)
	}
	for {
		ev := next(t, s)
		if ev.Kind() == EventGap && bytes.Contains([]byte(ev.Gap.Reason), []byte(gapReasonReconnected)) {
			break
		}
	}
	<-bus.joined
	bus.send(eventFrame(t, "ok/2", map[string]any{}))
	if ev := next(t, s); ev.Tag != "ok/2" {
		t.Fatalf("%+v", ev)
	}
}

func TestSubscribeEventsErrors(t *testing.T) {
	t.Parallel()
	if _, err := SubscribeEvents(context.Background(), "unix://"+filepath.Join(t.TempDir(), "missing.ipc")); err == nil {
		t.Fatal("missing socket accepted")
	}
	if _, err := SubscribeEvents(context.Background(), "http://x"); err == nil {
		t.Fatal("bad scheme accepted")
	}
	bus, addr := startBus(t, "unix", framingBare)
	ctx, cancel := context.WithCancel(context.Background())
	s, err := SubscribeEvents(ctx, addr)
	if err != nil {
		t.Fatal(err)
	}
	<-bus.joined
	cancel()
	for range s.Events() {
	}
	_ = s.Close()
}

func TestEventQueueByteBudget(t *testing.T) {
	t.Parallel()
	q := newEventQueue(100, 1000)
	for i := 0; i < 10; i++ {
		q.push(Event{Tag: "e"}, 400)
	}
	got, dropped := 0, 0
	for {
		ev, ok := q.pop()
		if !ok {
			break
		}
		q.handed()
		if ev.Kind() == EventGap {
			dropped += ev.Gap.Dropped
		} else {
			got++
		}
	}
	if got != 2 || dropped != 8 {
		t.Fatalf("got %d dropped %d", got, dropped)
	}
	q.push(Event{Tag: "big"}, 5000) // one event always fits in an empty queue
	ev, ok := q.pop()
	if !ok || ev.Tag != "big" || q.bytes != 5000 {
		t.Fatalf("%+v %v %d", ev, ok, q.bytes)
	}
	// until the consumer has it, the popped event still holds its memory
	q.push(Event{Tag: "next"}, 10)
	if ev, ok := q.pop(); !ok || ev.Kind() != EventGap || ev.Gap.Dropped != 1 {
		t.Fatalf("event accepted while the held one is over the budget: %+v", ev)
	}
	q.handed()
	if q.bytes != 0 {
		t.Fatalf("bytes %d after handing over", q.bytes)
	}
}

// TestEventQueueGrowsInOrder: the ring starts small and grows as events pile up, across its
// wrap-around, keeping their order, up to the capacity (then events are dropped into a gap).
func TestEventQueueGrowsInOrder(t *testing.T) {
	t.Parallel()
	q := newEventQueue(300, 1<<30)
	next, want := 0, 0
	push := func(k int) {
		for range k {
			q.push(Event{Tag: strconv.Itoa(next)}, 1)
			next++
		}
	}
	pop := func(k int) {
		for range k {
			ev, ok := q.pop()
			q.handed()
			if !ok || ev.Tag != strconv.Itoa(want) {
				t.Fatalf("popped %+v %v, want event %d", ev, ok, want)
			}
			want++
		}
	}
	push(50)
	pop(40) // the head is inside the first ring
	push(200)
	if len(q.buf) >= q.slots || len(q.buf) < 210 {
		t.Fatalf("ring of %d slots for 210 events (at most %d)", len(q.buf), q.slots)
	}
	pop(210)
	push(400)
	if len(q.buf) != q.slots {
		t.Fatalf("ring of %d slots, want %d when full", len(q.buf), q.slots)
	}
	pop(300)
	ev, ok := q.pop()
	if !ok || ev.Gap == nil || ev.Gap.Dropped != 100 {
		t.Fatalf("after a full queue: %+v %v, want a gap of 100 dropped", ev, ok)
	}
}
