// Package salttrace is the salt package's internal request trace: the benchmark program
// (bench/cmd/benchrun) puts a *Trace in a request's context and the salt Client stamps the phases
// of that request into it (auth, encode, dial, ZMTP handshake or liveness proof, send, reply,
// decode). It is internal so that it adds nothing to the public API; a request without a Trace
// pays one context lookup.
package salttrace

import (
	"context"
	"time"
)

// Phase is one stamped point of a request, in the order a request passes them.
type Phase int

// Phases of one salt request.
const (
	Start      Phase = iota // the public call (Publish, ...) was entered
	Authed                  // the credentials were obtained (a user key file is read per request)
	Encoded                 // the load was built and encoded into the request envelope
	Connected               // TCP (or unix) connection established (fresh connections only)
	Handshaken              // ZMTP greeting + READY exchanged (fresh connections only)
	Proven                  // a pooled connection answered PING with PONG (reused connections only)
	Sent                    // the request message was written to the socket
	Replied                 // the whole reply message was read
	Returned                // the connection was closed (fresh) or pooled (reused)
	Decoded                 // the reply was decoded (msgpack, within its budget)
	Done                    // the public call returns (reply checked)
	NumPhases
)

var names = [NumPhases]string{"start", "authed", "encoded", "connected", "handshaken", "proven", "sent", "replied", "returned", "decoded", "done"}

func (p Phase) String() string {
	if p < 0 || p >= NumPhases {
		return "?"
	}
	return names[p]
}

// Trace holds the stamps of one request. The zero value is ready; a Trace is written by the
// goroutine doing the request and read after it returns.
type Trace struct {
	At [NumPhases]time.Time
}

// Mark stamps p now. A nil Trace does nothing.
func (t *Trace) Mark(p Phase) {
	if t != nil {
		t.At[p] = time.Now()
	}
}

// Span is the time from phase a to phase b, or -1 when either was not stamped.
func (t *Trace) Span(a, b Phase) time.Duration {
	if t.At[a].IsZero() || t.At[b].IsZero() {
		return -1
	}
	return t.At[b].Sub(t.At[a])
}

type key struct{}

// With returns a context carrying t.
func With(ctx context.Context, t *Trace) context.Context { return context.WithValue(ctx, key{}, t) }

// From returns the Trace of ctx, or nil.
func From(ctx context.Context) *Trace {
	t, _ := ctx.Value(key{}).(*Trace)
	return t
}
