package salt_test

import (
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/oduflow/oduflow-go/salt"
	"github.com/oduflow/oduflow-go/salt/salttest"
)

// On the later master (salttest.Generation3007) every publish also fires
// salt/job/<jid>/publish: the stream delivers it as a JobPublish, and the
// only JobReturn of the job is the minion's.
func TestSimulator3007PublishEventIsNotAReturn(t *testing.T) {
	t.Parallel()
	e := startSim(t, salttest.WithGeneration(salttest.Generation3007))
	syncBus(t, e)
	jid, err := e.ping(t, e.key)
	if err != nil {
		t.Fatal(err)
	}
	var publishes, returns int
	waitEvent(t, e.stream, 5*time.Second, "the return", func(ev salt.Event) bool {
		if ev.JobPublish != nil && ev.JobPublish.JID == jid && ev.JobPublish.Fun == "test.ping" {
			publishes++
		}
		if ev.JobReturn != nil && ev.JobReturn.JID == jid {
			returns++
			return true
		}
		return false
	})
	if publishes != 1 || returns != 1 {
		t.Fatalf("publish events %d, returns %d", publishes, returns)
	}
}

// On the later master one reader that stops reading blocks the bus for
// everyone: the library's stream, expecting events after a publish, reports
// the typed "bus stalled" gap; once the stalled reader goes, events flow again.
func TestSimulator3007StalledReaderIsABusStalledGap(t *testing.T) {
	t.Parallel()
	e := startSim(t, salttest.WithGeneration(salttest.Generation3007))
	syncBus(t, e)
	stalled, err := net.Dial("unix", strings.TrimPrefix(e.sim.EventsAddr(), "unix://"))
	if err != nil {
		t.Fatal(err)
	}
	defer stalled.Close()
	if err := e.sim.WaitUntil(t.Context(), func() bool { return e.sim.EventReaders() >= 2 }); err != nil {
		t.Fatal("the stalled reader never joined the bus")
	}
	blob := map[string]any{"blob": strings.Repeat("x", 64<<10)}
	for i := 0; i < 60; i++ { // ~4 MB: far beyond what the stalled socket buffers
		if err := e.sim.FireEvent("salt/test/flood", blob); err != nil {
			t.Fatal(err)
		}
	}
	// drain what got through before the publisher blocked
	for quiet := false; !quiet; {
		select {
		case <-e.stream.Events():
		case <-time.After(500 * time.Millisecond):
			quiet = true
		}
	}
	if _, err := e.ping(t, e.key); err != nil { // acknowledged by the master, yet no event comes
		t.Fatal(err)
	}
	e.stream.ExpectEvents(300 * time.Millisecond)
	select {
	case ev := <-e.stream.Events():
		if ev.Gap == nil || !errors.Is(ev.Gap.Err, salt.ErrBusStalled) {
			t.Fatalf("want the bus stalled gap, got %+v", ev)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no bus stalled gap")
	}
	if !e.stream.Connected() {
		t.Fatal("a stalled bus is still a connected one")
	}
	_ = stalled.Close()
	waitEvent(t, e.stream, 10*time.Second, "events again", func(ev salt.Event) bool { return ev.JobReturn != nil })
}
