package salttest

import (
	"fmt"
	"testing"
	"time"
)

// TestQueuedReturnsInOrder: returns fired through the dispatch queue (publishQueued) reach a
// reader connected before they were fired, in order, and an event published afterwards
// (FireEvent) never overtakes them; returns queued when the bus is stalled still go out (they
// were fired before the stall), and none is given while it lasts.
func TestQueuedReturnsInOrder(t *testing.T) {
	s := startLab(t)
	evs := dialEvents(t, s.EventsAddr()) // connect() returned: not yet accepted
	s.lifeMu.Lock()
	b := s.bus
	s.lifeMu.Unlock()
	queue := func(from, to int) {
		for i := from; i < to; i++ {
			f, err := b.frame(fmt.Sprintf("ret/%d", i), newOmap("i", i))
			if err != nil {
				t.Fatal(err)
			}
			b.publishQueued(f)
		}
	}
	queue(0, 200)
	if err := s.FireEvent("after", map[string]any{}); err != nil {
		t.Fatal(err)
	}
	// queued as publishQueued does, but without waking the dispatcher: the stall must give them
	b.mu.Lock()
	for i := 200; i < 210; i++ {
		f, err := b.frame(fmt.Sprintf("ret/%d", i), newOmap("i", i))
		if err != nil {
			t.Fatal(err)
		}
		b.queued = append(b.queued, f)
	}
	b.mu.Unlock()
	s.StallEventBus(true)
	var got []string
	read := func(until string) {
		for {
			ev, err := evs.next(5 * time.Second)
			if err != nil {
				t.Fatalf("after %d events, waiting for %s: %v", len(got), until, err)
			}
			got = append(got, ev.tag)
			if ev.tag == until {
				return
			}
		}
	}
	read("ret/209") // while the bus is stalled: they were fired before
	queue(210, 220) // dropped: fired while the bus is stalled
	s.StallEventBus(false)
	if err := s.FireEvent("end", map[string]any{}); err != nil {
		t.Fatal(err)
	}
	read("end")
	var want []string
	for i := range 200 {
		want = append(want, fmt.Sprintf("ret/%d", i))
	}
	want = append(want, "after")
	for i := 200; i < 210; i++ {
		want = append(want, fmt.Sprintf("ret/%d", i))
	}
	want = append(want, "end")
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("events in this order:\n%v\nwant\n%v", got, want)
	}
}
