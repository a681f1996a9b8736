package service

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"
)

// The server-sent event streams of a request's status (GET …/events): one "status" event with the
// response object at once, then one per change (oduflow's Dispatcher.Watch: no polling), and the stream
// closes after succeeded or failed. An error after the stream began is one "error" event with the JSON
// error body, then the close. Authorization is the status route's: a principal of the client's company.
// A browser's EventSource reconnects when a stream closes early; after a terminal event there is nothing
// more to say, and the client stops.

// statusEvents is GET /v1/requests/{profile}/{minion}/{request_id}/events.
func (s *Service) statusEvents(w http.ResponseWriter, r *http.Request) {
	const op = "status_events"
	profile, minion, request, key, ok := s.requestOf(w, r, op)
	if !ok {
		return
	}
	stream := newEventStream(w)
	for resp, err := range s.d.Watch(r.Context(), minion, key, profile) {
		if err != nil {
			stream.fail(s, r, op, asCaller(err, key, request))
			return
		}
		if !stream.send("status", callerResponse(resp, key, request)) {
			return
		}
	}
}

// executionEvents is GET /v1/minions/{minion}/custom-executions/{request_id}/events.
func (s *Service) executionEvents(w http.ResponseWriter, r *http.Request) {
	const op = "custom_status_events"
	minion, request, key, _, ok := s.executionOf(w, r, op)
	if !ok {
		return
	}
	stream := newEventStream(w)
	for st, err := range s.d.CustomWatch(r.Context(), minion, key) {
		if err != nil {
			stream.fail(s, r, op, asCaller(err, key, request))
			return
		}
		if !stream.send("status", callerCustom(st, key, request)) {
			return
		}
	}
}

// noDeadline is the zero time: no write deadline.
var noDeadline time.Time

// eventStream writes text/event-stream: the headers with the first event, each event flushed (through
// the wrappers of the route's middleware: http.ResponseController follows their Unwrap).
type eventStream struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	started bool
}

func newEventStream(w http.ResponseWriter) *eventStream {
	return &eventStream{w: w, rc: http.NewResponseController(w)}
}

func (es *eventStream) begin() {
	if es.started {
		return
	}
	es.started = true
	h := es.w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no") // a proxy must not hold the events back
	es.w.WriteHeader(http.StatusOK)
	// The server's write deadline (if any) would end a long stream: lift it for this response only.
	_ = es.rc.SetWriteDeadline(noDeadline)
}

// send writes one event; false when the client is gone.
func (es *eventStream) send(event string, v any) bool {
	b, err := json.Marshal(v)
	if err != nil {
		return false
	}
	es.begin()
	if _, err := fmt.Fprintf(es.w, "event: %s\ndata: %s\n\n", event, b); err != nil {
		return false
	}
	return es.rc.Flush() == nil
}

// fail ends the stream with err: the ordinary error answer before the first event, an "error" event
// with the same body after it; nothing once the client is gone.
func (es *eventStream) fail(s *Service, r *http.Request, op string, err error) {
	if r.Context().Err() != nil {
		return
	}
	if !es.started {
		s.fail(es.w, r, op, err)
		return
	}
	_, body := classify(err)
	es.send("error", body)
}
