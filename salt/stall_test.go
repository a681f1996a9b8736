package salt_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/oduflow/oduflow-go/internal/testwait"
	"github.com/oduflow/oduflow-go/salt"
)

// A bus whose connection stays open but delivers nothing while events are expected is a typed gap
// ("bus stalled", ErrBusStalled), reported once per stall; a frame arriving in time is no stall.
func TestExpectEventsStalledBus(t *testing.T) {
	t.Parallel()
	frames := make(chan []byte, 4)
	addr := serveEventConn(t, func(nc net.Conn) {
		for f := range frames {
			if _, err := nc.Write(f); err != nil {
				return
			}
		}
	})
	s, err := salt.SubscribeEvents(context.Background(), addr, salt.WithReconnectBackoff(time.Hour, time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { close(frames); _ = s.Close() })
	if !s.Connected() {
		t.Fatal("a fresh stream is not connected")
	}

	// A frame in time: its event, and no stall.
	s.ExpectEvents(300 * time.Millisecond)
	frames <- mustEventFrame(t, "salt/job/20261129120000000001/new", 10)
	select {
	case ev := <-s.Events():
		if ev.Gap != nil {
			t.Fatalf("a gap before the event: %+v", ev.Gap)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no event")
	}
	select {
	case ev := <-s.Events():
		t.Fatalf("a frame arrived in time, yet: %+v", ev)
	case <-time.After(600 * time.Millisecond):
	}

	// Nothing at all while expected: one typed gap.
	t0 := time.Now()
	s.ExpectEvents(100 * time.Millisecond)
	s.ExpectEvents(100 * time.Millisecond) // one watchdog serves both
	select {
	case ev := <-s.Events():
		if ev.Gap == nil || !errors.Is(ev.Gap.Err, salt.ErrBusStalled) || !strings.Contains(ev.Gap.Reason, "bus stalled") {
			t.Fatalf("want a bus stalled gap, got %+v", ev)
		}
		wantOneLine(t, "bus stalled", ev.Gap.Err)
		if el := time.Since(t0); el < 100*time.Millisecond {
			t.Fatalf("stall reported after %s, before the expectation ended", el)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no stall gap")
	}
	// Still stalled: not reported again until a frame has arrived.
	s.ExpectEvents(100 * time.Millisecond)
	select {
	case ev := <-s.Events():
		t.Fatalf("a second report of the same stall: %+v", ev)
	case <-time.After(500 * time.Millisecond):
	}
}

// Connected follows the connection: false once the bus hangs up (the stream reconnects with backoff).
func TestEventStreamConnected(t *testing.T) {
	t.Parallel()
	addr := serveEventConn(t, func(nc net.Conn) { _ = nc.Close() })
	s, err := salt.SubscribeEvents(context.Background(), addr, salt.WithReconnectBackoff(time.Hour, time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	testwait.Until(t, "still connected after the bus hung up", 5*time.Second, func() bool { return !s.Connected() })
	_ = s.Close()
	if s.Connected() {
		t.Fatal("connected after Close")
	}
}
