// Package otel exports a Dispatcher's events to OpenTelemetry: spans per request and per worker step,
// and metrics, through the Hooks of an Adapter.
//
//	a := otel.New(otel.WithTracerProvider(tp), otel.WithMeterProvider(mp))
//	d, err := oduflow.New(client, events, oduflow.WithHooks(a.Hooks()))
//
// It is a nested module (its own go.mod) so that the oduflow module's dependency graph does not gain
// OpenTelemetry.
//
// Traces. A Start that creates a claim opens the span "oduflow.request" as a child of the span in the
// Start call's ctx: a local span, or the remote W3C trace context an HTTP server extracted into it (the
// propagation.TraceContext propagator). It carries the request's identity (oduflow.minion_id,
// oduflow.request_id, oduflow.profile, oduflow.jid) and ends at the request's final outcome here, with
// oduflow.status and oduflow.error_code (span status Error unless succeeded). Each worker step is a child
// span "oduflow.step <step>" covering the time from the previous step to it (up to "returned": the
// commit is the end of the request span itself). An in-process worker's ctx
// carries the caller's values, so the spans join the caller's trace. A detached worker or an adopting
// replica has no open span for the request: it opens one from its own ctx (a new trace) with the same
// identity attributes, which is how the two are joined (search by oduflow.request_id).
//
// Metrics (instrument names; attributes are the bounded enumerations the Hooks document, never ids):
//
//	oduflow.starts            counter     profile, created
//	oduflow.publications      counter     function, result
//	oduflow.outcomes          counter     profile, status, error_code
//	oduflow.operation.duration histogram  op (seconds)
//	oduflow.requests.in_flight updowncounter  (requests with an open span in this process)
//	oduflow.unverified_events counter     reason
//	oduflow.bus_gaps          counter     reason
//
// An open request span is kept until its outcome is committed in this process; a request drained by
// Close and finished by another replica is ended by End (call it at shutdown).
package otel
