package oduflow

import (
	"time"

	"github.com/oduflow/oduflow-go/receipt"
)

// Hooks receive metrics events; plug Prometheus or OpenTelemetry here without the library importing
// either. Every field is optional (nil: the event is dropped), so a Hooks value built today keeps
// compiling when events are added. The funcs are called synchronously on the dispatcher's and workers'
// goroutines: they must be fast and goroutine-safe. Label values are bounded enumerations (profiles,
// statuses, error codes, function names, reasons), never identities.
type Hooks struct {
	// Started counts Start calls: created is true when this call created the claim.
	Started func(profile receipt.Profile, created bool)
	// Published counts publications by function ("test.ping", "oduflow_job.capabilities",
	// "oduflow_job.run", "oduflow_job.status", "oduflow_job.attest") and result ("ok", or an error code
	// such as publish_outcome_unknown). A worker reports oduflow_job.capabilities (its preflight) before it
	// records the dispatch intent and publishes oduflow_job.run.
	Published func(fun string, result string)
	// Outcome counts final outcomes committed by a worker or by reconciliation (code may be "").
	Outcome func(profile receipt.Profile, status receipt.Status, code string)
	// Observe records durations: "start", "status", "dispatch_to_final", "publish", "poll", "proof",
	// "capabilities" (one oduflow_job.capabilities call: a worker's preflight check, or Ping's),
	// "adoption" (from taking over a request whose worker is gone to its final commit, WithAdoption).
	Observe func(op string, d time.Duration)
	// UnverifiedEvent counts returns that are never evidence: forged or stray events on the master bus,
	// and answers whose receipt proof does not verify. reason is one of:
	//
	//	minion_event   data cmd is _minion_event: fired by some minion, not a return
	//	id_mismatch    data id is not the minion of the tag
	//	wrong_minion   a return of the request's JID from another minion
	//	not_receipt    not a protocol-1 receipt, or bound to another claim
	//	proof_invalid  an attest answer whose proof does not verify or binds elsewhere
	//	unproven       a terminal-looking return the minion's signed answer does not confirm
	UnverifiedEvent func(reason string)
	// Step traces a worker's progress through one request, in order: "claimed" (request lock held, claim
	// read), "lease" (client lease held, preflight passed), "dispatch_recorded" (the dispatch intent is
	// durable, nothing sent yet), "publish_sending", "publish_replied", "returned" (a proven terminal
	// receipt in hand, not committed yet), "committed". It runs on the worker's goroutine: a slow Step
	// slows the worker (a tracer or a crash test may do that on purpose).
	Step func(step string)
	// BusGap counts the gaps of the dispatcher's event-bus subscription (events may have been missed;
	// waiting workers poll at once). reason is one of:
	//
	//	bus_stalled   connected, but nothing at all arrived within Timers.BusStall of a publish the master
	//	              acknowledged: the master's event publisher is blocked (see the README: what the
	//	              operator does); returns and status answers cannot arrive meanwhile
	//	disconnected  the connection dropped (the stream reconnects by itself)
	//	other         reconnected, a slow consumer, an undecodable or oversized frame
	BusGap func(reason string)
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

// hookSet calls the Hooks that are set.
type hookSet struct{ h Hooks }

func (s hookSet) started(p receipt.Profile, created bool) {
	if s.h.Started != nil {
		s.h.Started(p, created)
	}
}

func (s hookSet) published(fun, result string) {
	if s.h.Published != nil {
		s.h.Published(fun, result)
	}
}

func (s hookSet) outcome(p receipt.Profile, st receipt.Status, code string) {
	if s.h.Outcome != nil {
		s.h.Outcome(p, st, code)
	}
}

func (s hookSet) observe(op string, d time.Duration) {
	if s.h.Observe != nil {
		s.h.Observe(op, d)
	}
}

func (s hookSet) busGap(reason string) {
	if s.h.BusGap != nil {
		s.h.BusGap(reason)
	}
}

func (s hookSet) unverifiedEvent(reason string) {
	if s.h.UnverifiedEvent != nil {
		s.h.UnverifiedEvent(reason)
	}
}
