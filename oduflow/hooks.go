package oduflow

import (
	"context"
	"time"

	"github.com/oduflow/oduflow-go/oduflow/claims"
	"github.com/oduflow/oduflow-go/receipt"
)

// RequestRef is the identity of the request a hook event belongs to, so that a metric exemplar, a span or
// a log line can be correlated with it. Every field is a validated identity (never free text from a
// minion); fields that do not apply are empty: JID is empty until the claim exists, and an event that
// belongs to no request (a Ping, a bus gap, a stray event on the bus) carries the zero RequestRef, or only
// Minion.
//
// Identities are for correlation, not for metric labels: a metrics adapter labels by the bounded
// arguments (profile, status, error code, function, reason) and must not turn RequestID or JID into a
// label.
type RequestRef struct {
	Minion    string
	RequestID string
	Profile   receipt.Profile
	JID       string
}

// IsZero reports whether r names no request.
func (r RequestRef) IsZero() bool { return r.RequestID == "" }

// Hooks receive metrics and tracing events; plug Prometheus or OpenTelemetry here without the library
// importing either (the nested modules oduflow/prom and oduflow/otel are such adapters). Every field is
// optional (nil: the event is dropped). The funcs are called synchronously on the dispatcher's and
// workers' goroutines: they must be fast and goroutine-safe. Label values are bounded enumerations
// (profiles, statuses, error codes, function names, reasons), never identities; the identities come
// separately in the RequestRef.
//
// The ctx of every hook is the context of the work it reports: the caller's ctx for Start, Status,
// Resume, Reconcile and Ping; for a worker step, the worker's context, which carries the values of the
// Start call's ctx (so a span or W3C trace context the caller put there is the parent of the worker's
// events) but not its cancellation or deadline. A detached worker (WithDetachedWorkers) is another process
// and gets no value of the caller's ctx: its events carry the same RequestRef (minion, request id, JID),
// which is how its spans are joined to the caller's trace. Adoption and the dispatcher's own
// background work run under the dispatcher's context. A hook must not block on ctx and must not keep it.
type Hooks struct {
	// Started counts Start calls: created is true when this call created the claim.
	Started func(ctx context.Context, req RequestRef, created bool)
	// Published counts publications by function ("test.ping", "oduflow_job.capabilities",
	// "oduflow_job.run", "oduflow_job.status", "oduflow_job.attest") and result ("ok", or an error code
	// such as publish_outcome_unknown). A worker reports oduflow_job.capabilities (its preflight) before it
	// records the dispatch intent and publishes oduflow_job.run. One oduflow_job.capabilities
	// publication serves the preflights of every request then waiting for that minion: it names no
	// request and its ctx is the dispatcher's (the preflight's Observe "capabilities" names the request).
	// A module that signs its run's return ("proof": {"run_return": true}) proves the receipt in that
	// return: such a request publishes no oduflow_job.attest unless the signed return is lost or does not
	// verify, so a dispatched request is two minion jobs (capabilities, which Timers.CapabilityReuse can
	// spare, and run) where a module without it needs attest as a third.
	Published func(ctx context.Context, req RequestRef, fun string, result string)
	// Outcome counts final outcomes committed by a worker or by reconciliation (code may be "").
	Outcome func(ctx context.Context, req RequestRef, status receipt.Status, code string)
	// Observe records durations: "start", "status", "dispatch_to_final", "publish", "poll", "proof" (one
	// oduflow_job.attest call; a receipt proven by the run's own signed return makes none),
	// "capabilities" (one oduflow_job.capabilities call: a worker's preflight check, or Ping's; a preflight
	// that reuses a kept answer, Timers.CapabilityReuse, makes no call and reports none),
	// "adoption" (from taking over a request whose worker is gone to its final commit, WithAdoption).
	Observe func(ctx context.Context, req RequestRef, op string, d time.Duration)
	// UnverifiedEvent counts returns that are never evidence: forged or stray events on the master bus,
	// and answers whose receipt proof does not verify. reason is one of:
	//
	//	minion_event   data cmd is _minion_event: fired by some minion, not a return
	//	id_mismatch    data id is not the minion of the tag
	//	wrong_minion   a return of the request's JID from another minion
	//	not_receipt    not a protocol-1 receipt, or bound to another claim
	//	proof_invalid  an attest answer, or a signed return of the run, whose proof does not verify (another
	//	               key, another nonce: a replay) or binds elsewhere
	//	unproven       a terminal-looking return the minion's signed answer does not confirm
	UnverifiedEvent func(ctx context.Context, req RequestRef, reason string)
	// Step traces a worker's progress through one request, in order: "claimed" (request lock held, claim
	// read), "lease" (client lease held, preflight passed), "dispatch_recorded" (the dispatch intent is
	// durable, nothing sent yet), "publish_sending", "publish_replied", "returned" (a proven terminal
	// receipt in hand, not committed yet), "committed". It runs on the worker's goroutine: a slow Step
	// slows the worker (a tracer or a crash test may do that on purpose).
	Step func(ctx context.Context, req RequestRef, step string)
	// BusGap counts the gaps of the dispatcher's event-bus subscription (events may have been missed;
	// waiting workers poll at once). It belongs to no request (ctx is the dispatcher's). reason is one of:
	//
	//	bus_stalled   connected, but nothing at all arrived within Timers.BusStall of a publish the master
	//	              acknowledged: the master's event publisher is blocked (docs/ARCHITECTURE.md, "Readiness,
	//	              refusals and a stalled bus": what the operator does); returns and status answers cannot arrive meanwhile
	//	disconnected  the connection dropped (the stream reconnects by itself)
	//	other         reconnected, a slow consumer, an undecodable or oversized frame
	BusGap func(ctx context.Context, reason string)
}

// Reasons passed to Hooks.BusGap.
const (
	busGapStalled      = "bus_stalled"
	busGapDisconnected = "disconnected"
	busGapOther        = "other"
)

// Reasons passed to Hooks.UnverifiedEvent.
const (
	unverifiedMinionEvent = "minion_event"
	unverifiedIDMismatch  = "id_mismatch"
	unverifiedWrongMinion = "wrong_minion"
	unverifiedNotReceipt  = "not_receipt"
	unverifiedProof       = "proof_invalid"
	unverifiedUnproven    = "unproven"
)

// requestRefKey carries the RequestRef of the work a context belongs to (withRequest), so that hooks
// called deep in a worker's or a call's path (publish, poll, proof) name the request without every
// function passing it along.
type requestRefKey struct{}

// withRequest returns ctx carrying ref for the hooks.
func withRequest(ctx context.Context, ref RequestRef) context.Context {
	return context.WithValue(ctx, requestRefKey{}, ref)
}

// requestOf is the RequestRef ctx carries (withRequest), or the zero one.
func requestOf(ctx context.Context) RequestRef {
	ref, _ := ctx.Value(requestRefKey{}).(RequestRef)
	return ref
}

// refOf is the identity of claim c.
func refOf(c *claims.Claim) RequestRef {
	return RequestRef{Minion: c.MinionID, RequestID: c.RequestID, Profile: c.EffectiveProfile(), JID: c.JID}
}

// hookSet calls the Hooks that are set. A method given a claim names its request; the others name the
// request ctx carries (withRequest).
type hookSet struct{ h Hooks }

func (s hookSet) started(ctx context.Context, c *claims.Claim, created bool) {
	if s.h.Started != nil {
		s.h.Started(ctx, refOf(c), created)
	}
}

func (s hookSet) published(ctx context.Context, fun, result string) {
	if s.h.Published != nil {
		s.h.Published(ctx, requestOf(ctx), fun, result)
	}
}

func (s hookSet) outcome(ctx context.Context, c *claims.Claim, st receipt.Status, code claims.ErrorCode) {
	if s.h.Outcome != nil {
		s.h.Outcome(ctx, refOf(c), st, string(code))
	}
}

func (s hookSet) observe(ctx context.Context, op string, d time.Duration) {
	if s.h.Observe != nil {
		s.h.Observe(ctx, requestOf(ctx), op, d)
	}
}

func (s hookSet) step(ctx context.Context, c *claims.Claim, step string) {
	if s.h.Step != nil {
		s.h.Step(ctx, refOf(c), step)
	}
}

func (s hookSet) busGap(ctx context.Context, reason string) {
	if s.h.BusGap != nil {
		s.h.BusGap(ctx, reason)
	}
}

func (s hookSet) unverifiedEvent(ctx context.Context, reason string) {
	if s.h.UnverifiedEvent != nil {
		s.h.UnverifiedEvent(ctx, requestOf(ctx), reason)
	}
}
