package salt_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/oduflow/oduflow-go/internal/testwait"
	"github.com/oduflow/oduflow-go/salt"
)

func nextEvent(t *testing.T, s *salt.EventStream, d time.Duration) (salt.Event, bool) {
	t.Helper()
	select {
	case ev, ok := <-s.Events():
		return ev, ok
	case <-time.After(d):
		return salt.Event{}, false
	}
}

// A peer that sends half a frame and stops must not stall the stream: the connection is dropped
// after the frame deadline, a gap is reported, and the stream reconnects. An idle bus (no byte at
// all, or nothing after a complete frame) never yields a gap.
func TestEventFrameDeadline(t *testing.T) {
	t.Parallel()
	const timeout = 300 * time.Millisecond
	whole := mustEventFrame(t, "salt/test/whole", 10)
	var conns atomic.Int32
	addr := serveEventConn(t, func(nc net.Conn) {
		if conns.Add(1) == 1 {
			// a complete frame, idle for 3 deadlines, then half a frame
			_, _ = nc.Write(whole)
			// the peer idles for three frame deadlines: the time is the behaviour under test
			time.Sleep(3 * timeout)
			_, _ = nc.Write(whole[:len(whole)/2])
			return
		}
		_, _ = nc.Write(whole) // after the reconnection
	})
	s, err := salt.SubscribeEvents(context.Background(), addr, salt.WithFrameTimeout(timeout),
		salt.WithReconnectBackoff(10*time.Millisecond, 20*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ev, ok := nextEvent(t, s, 5*time.Second)
	if !ok || ev.Tag != "salt/test/whole" {
		t.Fatalf("first event %+v %v", ev, ok)
	}
	start := time.Now()
	ev, ok = nextEvent(t, s, 10*time.Second)
	if !ok || ev.Kind() != salt.EventGap {
		t.Fatalf("want a gap, got %+v %v", ev, ok)
	}
	// the gap comes after the idle time plus one deadline, not during the idle time
	if el := time.Since(start); el < 3*timeout+timeout/2 {
		t.Fatalf("gap after %s: the idle bus was timed out", el)
	}
	if !errors.Is(ev.Gap.Err, salt.ErrFrameTimeout) || ev.Gap.Reason == "" {
		t.Fatalf("gap %+v", ev.Gap)
	}
	t.Logf("gap %q after %s", ev.Gap.Reason, time.Since(start))
	for {
		ev, ok = nextEvent(t, s, 5*time.Second)
		if !ok {
			t.Fatal("no event after the reconnection")
		}
		if ev.Kind() != salt.EventGap {
			break
		}
	}
	if ev.Tag != "salt/test/whole" {
		t.Fatalf("after reconnection %+v", ev)
	}
}

// A frame trickling in slower than its deadline is dropped; one that completes in time is not,
// however slowly its bytes arrive within the deadline.
func TestEventFrameDeadlineCountsFromTheFirstByte(t *testing.T) {
	t.Parallel()
	frame := mustEventFrame(t, "salt/test/slow", 100)
	addr := serveEventConn(t, func(nc net.Conn) {
		for i := 0; i < len(frame); i += 10 {
			_, _ = nc.Write(frame[i:min(i+10, len(frame))])
			time.Sleep(20 * time.Millisecond) // ~20 chunks: ~400 ms for the whole frame
		}
	})
	s, err := salt.SubscribeEvents(context.Background(), addr, salt.WithFrameTimeout(2*time.Second),
		salt.WithReconnectBackoff(time.Hour, time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if ev, ok := nextEvent(t, s, 5*time.Second); !ok || ev.Tag != "salt/test/slow" {
		t.Fatalf("slow frame within its deadline: %+v %v", ev, ok)
	}
	s2, err := salt.SubscribeEvents(context.Background(), addr, salt.WithFrameTimeout(100*time.Millisecond),
		salt.WithReconnectBackoff(time.Hour, time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if ev, ok := nextEvent(t, s2, 5*time.Second); !ok || ev.Kind() != salt.EventGap || !errors.Is(ev.Gap.Err, salt.ErrFrameTimeout) {
		t.Fatalf("frame slower than its deadline: %+v %v", ev, ok)
	}
}

// The tag is filtered before the data is decoded: a frame whose data is over the decode budget
// is dropped silently when its tag does not match, and reported as a gap when it does.
func TestEventTagFilteredBeforeDecoding(t *testing.T) {
	t.Parallel()
	costly := mustEventFrame(t, "other/costly", 10) // 50 ints: over a budget of 10 elements
	cheap, _ := salt.EncodeValue(map[string]any{"a": 1})
	cheapFrame := eventFrameOf(t, "salt/cheap", cheap)
	stream := append(append(append([]byte(nil), costly...), cheapFrame...), mustEventFrame(t, "salt/costly", 10)...)
	addr := serveEventBytes(t, stream)
	s, err := salt.SubscribeEvents(context.Background(), addr, salt.WithTagPrefixes("salt/"),
		salt.WithEventDecodeLimits(salt.DecodeLimits{MaxElements: 10, MaxBytes: 1 << 20, MaxDepth: 8}),
		salt.WithReconnectBackoff(time.Hour, time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if ev, ok := nextEvent(t, s, 5*time.Second); !ok || ev.Tag != "salt/cheap" {
		t.Fatalf("first delivered %+v %v: the non-matching costly frame was decoded", ev, ok)
	}
	ev, ok := nextEvent(t, s, 5*time.Second)
	if !ok || ev.Kind() != salt.EventGap || !errors.Is(ev.Gap.Err, salt.ErrDecodeBudget) || ev.Gap.Dropped != 1 {
		t.Fatalf("matching costly frame: %+v %v", ev, ok)
	}
}

// Frame buffers of events that were filtered out, undecodable or dropped are reused for the next
// large frame: an event that was queued must never see its text overwritten by a later frame.
func TestRecycledFrameBuffersNeverAliasQueuedEvents(t *testing.T) {
	t.Parallel()
	var stream []byte
	want := map[string]string{}
	for i := 0; i < 24; i++ {
		letter := string(rune('a' + i))
		pad := strings.Repeat(letter, 100<<10) // larger than the read buffer: an owned frame
		data, _ := salt.EncodeValue(map[string]any{"pad": pad})
		tag := "salt/keep/" + letter
		switch i % 3 {
		case 1:
			tag = "other/" + letter // filtered out: its buffer is recycled
		case 2:
			data = append(data[:len(data)-10], 0xc1) // undecodable: recycled too
		}
		if i%3 == 0 {
			want[tag] = pad
		}
		stream = append(stream, eventFrameOf(t, tag, data)...)
	}
	stream = append(stream, eventFrameOf(t, "salt/end", []byte{0x80})...)
	sent := make(chan struct{})
	addr := serveEventConn(t, func(nc net.Conn) { _, _ = nc.Write(stream); close(sent) })
	s, err := salt.SubscribeEvents(context.Background(), addr, salt.WithTagPrefixes("salt/"),
		salt.WithReconnectBackoff(time.Hour, time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	<-sent
	// slow consumer: everything (24 frames and the end) is read before the first event is taken
	testwait.Until(t, "the reader did not read the stream", 5*time.Second, func() bool { return salt.FramesRead(s) >= 25 })
	got := 0
	for {
		ev, ok := nextEvent(t, s, 5*time.Second)
		if !ok {
			t.Fatal("stream ended early")
		}
		if ev.Kind() == salt.EventGap {
			continue
		}
		if ev.Tag == "salt/end" {
			break
		}
		if pad, _ := ev.Data["pad"].(string); pad != want[ev.Tag] {
			t.Fatalf("%s: data overwritten (%q...)", ev.Tag, pad[:min(len(pad), 8)])
		}
		got++
	}
	if got != len(want) {
		t.Fatalf("%d events, want %d", got, len(want))
	}
}
