package service_test

import (
	"bufio"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/oduflow/oduflow-go/oduflow"
	"github.com/oduflow/oduflow-go/oduflow/oduflowtest/fakeminion"
	"github.com/oduflow/oduflow-go/receipt"
)

// sseEvent is one server-sent event.
type sseEvent struct{ name, data string }

// readEvents reads a text/event-stream to its end, calling each for every event.
func readEvents(t *testing.T, resp *http.Response, each func(sseEvent)) {
	t.Helper()
	sc := bufio.NewScanner(resp.Body)
	var ev sseEvent
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if ev.name != "" {
				each(ev)
			}
			ev = sseEvent{}
		case strings.HasPrefix(line, "event: "):
			ev.name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			ev.data = strings.TrimPrefix(line, "data: ")
		}
	}
}

// TestStatusEventsStreamEachChange: GET …/events answers text/event-stream with the status at once, one
// event per change as the worker commits it (no polling by the client), and closes after succeeded.
func TestStatusEventsStreamEachChange(t *testing.T) {
	t.Parallel()
	env := startSim(t)
	m := env.addMinion(fakeminion.WithHold())
	s := env.server()
	req := uuid.NewString()
	if code := s.do(t, "POST", "/v1/requests/configure/"+m.ID(), strings.NewReader(`{"request_id":"`+req+`"}`), nil); code != http.StatusCreated {
		t.Fatalf("start: %d", code)
	}
	r := s.request(t, admin, "GET", "/v1/requests/configure/"+m.ID()+"/"+req+"/events", nil)
	resp, err := s.http.Client().Do(r)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("%d %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	var got []oduflow.Response
	released := false
	t0 := time.Now()
	readEvents(t, resp, func(ev sseEvent) {
		if ev.name != "status" {
			t.Fatalf("event %q: %s", ev.name, ev.data)
		}
		var st oduflow.Response
		if err := json.Unmarshal([]byte(ev.data), &st); err != nil {
			t.Fatal(err)
		}
		got = append(got, st)
		if st.Status == receipt.StatusRunning && st.JID != nil && !released {
			released = true
			m.Release()
		}
	})
	if len(got) < 2 || got[0].Status != receipt.StatusRunning || got[len(got)-1].Status != receipt.StatusSucceeded {
		t.Fatalf("events %v", got)
	}
	if took := time.Since(t0); took > 5*time.Second {
		t.Fatalf("the stream took %v: it waited for a recheck", took)
	}
}
