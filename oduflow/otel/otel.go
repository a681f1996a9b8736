package otel

import (
	"context"
	"strconv"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/oduflow/oduflow-go/oduflow"
	"github.com/oduflow/oduflow-go/receipt"
)

// scope is the instrumentation scope of the tracer and the meter.
const scope = "github.com/oduflow/oduflow-go/oduflow/otel"

// Adapter turns oduflow.Hooks events into spans and metrics.
type Adapter struct {
	tracer trace.Tracer

	starts       metric.Int64Counter
	publications metric.Int64Counter
	outcomes     metric.Int64Counter
	durations    metric.Float64Histogram
	inFlight     metric.Int64UpDownCounter
	unverified   metric.Int64Counter
	busGaps      metric.Int64Counter

	mu   sync.Mutex
	open map[string]*requestSpan // by request id
}

// requestSpan is the open span of one request and the time of its last step.
type requestSpan struct {
	span     trace.Span
	ctx      context.Context // carries span: the parent of its step spans
	lastStep time.Time
}

// Option configures New.
type Option func(*config)

type config struct {
	tp trace.TracerProvider
	mp metric.MeterProvider
}

// WithTracerProvider sets where spans go (default: none are recorded).
func WithTracerProvider(tp trace.TracerProvider) Option { return func(c *config) { c.tp = tp } }

// WithMeterProvider sets where metrics go (default: none are recorded).
func WithMeterProvider(mp metric.MeterProvider) Option { return func(c *config) { c.mp = mp } }

// New returns an Adapter. Without providers it records nothing (pass the global ones, otel.GetTracerProvider
// and otel.GetMeterProvider, to use those).
func New(opts ...Option) (*Adapter, error) {
	cfg := config{tp: tracenoop.NewTracerProvider(), mp: metricnoop.NewMeterProvider()}
	for _, o := range opts {
		o(&cfg)
	}
	m := cfg.mp.Meter(scope)
	a := &Adapter{tracer: cfg.tp.Tracer(scope), open: map[string]*requestSpan{}}
	var err error
	counter := func(name, desc string) metric.Int64Counter {
		if err != nil {
			return nil
		}
		var c metric.Int64Counter
		c, err = m.Int64Counter(name, metric.WithDescription(desc))
		return c
	}
	a.starts = counter("oduflow.starts", "Start calls by profile; created=true when the call wrote the claim.")
	a.publications = counter("oduflow.publications", "Publications to the Salt master by function and result.")
	a.outcomes = counter("oduflow.outcomes", "Final outcomes committed by this process.")
	a.unverified = counter("oduflow.unverified_events", "Returns that are never evidence, by reason.")
	a.busGaps = counter("oduflow.bus_gaps", "Gaps of the master event-bus subscription, by reason.")
	if err != nil {
		return nil, err
	}
	if a.durations, err = m.Float64Histogram("oduflow.operation.duration", metric.WithUnit("s"),
		metric.WithDescription("Durations of the dispatcher's operations.")); err != nil {
		return nil, err
	}
	if a.inFlight, err = m.Int64UpDownCounter("oduflow.requests.in_flight",
		metric.WithDescription("Requests with an open span in this process.")); err != nil {
		return nil, err
	}
	return a, nil
}

func identity(req oduflow.RequestRef) []attribute.KeyValue {
	kv := []attribute.KeyValue{attribute.String("oduflow.minion_id", req.Minion),
		attribute.String("oduflow.request_id", req.RequestID), attribute.String("oduflow.profile", string(req.Profile))}
	if req.JID != "" {
		kv = append(kv, attribute.String("oduflow.jid", req.JID))
	}
	return kv
}

// request returns the open span of req, opening it as a child of ctx's span when there is none.
func (a *Adapter) request(ctx context.Context, req oduflow.RequestRef) *requestSpan {
	a.mu.Lock()
	defer a.mu.Unlock()
	if rs, ok := a.open[req.RequestID]; ok {
		return rs
	}
	sctx, span := a.tracer.Start(ctx, "oduflow.request", trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithAttributes(identity(req)...))
	rs := &requestSpan{span: span, ctx: sctx, lastStep: time.Now()}
	a.open[req.RequestID] = rs
	a.inFlight.Add(ctx, 1)
	return rs
}

// Hooks returns the oduflow.Hooks that feed a.
func (a *Adapter) Hooks() oduflow.Hooks {
	return oduflow.Hooks{
		Started: func(ctx context.Context, req oduflow.RequestRef, created bool) {
			a.starts.Add(ctx, 1, metric.WithAttributes(attribute.String("profile", string(req.Profile)),
				attribute.String("created", strconv.FormatBool(created))))
			if created && !req.IsZero() {
				a.request(ctx, req)
			}
		},
		Published: func(ctx context.Context, _ oduflow.RequestRef, fun, result string) {
			a.publications.Add(ctx, 1, metric.WithAttributes(attribute.String("function", fun),
				attribute.String("result", result)))
		},
		Outcome: func(ctx context.Context, req oduflow.RequestRef, st receipt.Status, code string) {
			a.outcomes.Add(ctx, 1, metric.WithAttributes(attribute.String("profile", string(req.Profile)),
				attribute.String("status", string(st)), attribute.String("error_code", code)))
			if req.IsZero() {
				return
			}
			rs := a.request(ctx, req)
			rs.span.SetAttributes(attribute.String("oduflow.status", string(st)),
				attribute.String("oduflow.error_code", code))
			if st != receipt.StatusSucceeded {
				rs.span.SetStatus(codes.Error, string(st)+" "+code)
			}
			a.end(ctx, req.RequestID)
		},
		Observe: func(ctx context.Context, _ oduflow.RequestRef, op string, d time.Duration) {
			a.durations.Record(ctx, d.Seconds(), metric.WithAttributes(attribute.String("op", op)))
		},
		UnverifiedEvent: func(ctx context.Context, req oduflow.RequestRef, reason string) {
			a.unverified.Add(ctx, 1, metric.WithAttributes(attribute.String("reason", reason)))
			if !req.IsZero() {
				a.request(ctx, req).span.AddEvent("oduflow.unverified_event",
					trace.WithAttributes(attribute.String("reason", reason)))
			}
		},
		Step: func(ctx context.Context, req oduflow.RequestRef, step string) {
			if req.IsZero() {
				return
			}
			if step == "committed" {
				// The outcome (Hooks.Outcome, just before this step) has ended the request's span.
				return
			}
			rs := a.request(ctx, req)
			now := time.Now()
			a.mu.Lock()
			from := rs.lastStep
			rs.lastStep = now
			a.mu.Unlock()
			_, span := a.tracer.Start(rs.ctx, "oduflow.step "+step, trace.WithTimestamp(from),
				trace.WithAttributes(attribute.String("oduflow.step", step)))
			span.End(trace.WithTimestamp(now))
		},
		BusGap: func(ctx context.Context, reason string) {
			a.busGaps.Add(ctx, 1, metric.WithAttributes(attribute.String("reason", reason)))
		},
	}
}

// end ends the open span of request, if any.
func (a *Adapter) end(ctx context.Context, request string) {
	a.mu.Lock()
	rs, ok := a.open[request]
	delete(a.open, request)
	a.mu.Unlock()
	if ok {
		rs.span.End()
		a.inFlight.Add(ctx, -1)
	}
}

// End ends every request span still open (requests without an outcome here: drained by Close, finished
// elsewhere), marking them "released"; call it after the Dispatcher's Close.
func (a *Adapter) End(ctx context.Context) {
	a.mu.Lock()
	ids := make([]string, 0, len(a.open))
	for id, rs := range a.open {
		rs.span.SetAttributes(attribute.Bool("oduflow.released", true))
		ids = append(ids, id)
	}
	a.mu.Unlock()
	for _, id := range ids {
		a.end(ctx, id)
	}
}
