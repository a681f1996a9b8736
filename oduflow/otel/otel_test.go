package otel_test

import (
	"context"
	"testing"

	"github.com/google/uuid"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/oduflow/oduflow-go/oduflow"
	"github.com/oduflow/oduflow-go/oduflow/oduflowtest/fakeminion"
	"github.com/oduflow/oduflow-go/oduflow/oduflowtest/simenv"
	odotel "github.com/oduflow/oduflow-go/oduflow/otel"
	"github.com/oduflow/oduflow-go/receipt"
)

const (
	callerTrace = "4bf92f3577b34da6a3ce929d0e0e4736"
	callerSpan  = "00f067aa0ba902b7"
)

// TestSpansJoinTheCallersTrace: a Start whose ctx carries a W3C trace context (extracted from a
// traceparent header, as an HTTP server does) opens the request's span as a child of it; the worker's
// steps are child spans of the request span although the worker outlives the Start call; the span ends
// at the outcome with its status and code; the metrics count the request.
func TestSpansJoinTheCallersTrace(t *testing.T) {
	e := simenv.Start(t)
	ok := e.AddMinion()
	refusing := e.AddMinion(fakeminion.WithRunRefusal("oduflow_job: caller execution options are refused"))
	sr := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr))
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	a, err := odotel.New(odotel.WithTracerProvider(tp), odotel.WithMeterProvider(mp))
	if err != nil {
		t.Fatal(err)
	}
	d := e.Dispatcher(oduflow.WithHooks(a.Hooks()))

	header := propagation.MapCarrier{"traceparent": "00-" + callerTrace + "-" + callerSpan + "-01"}
	ctx, cancel := context.WithCancel(propagation.TraceContext{}.Extract(context.Background(), header))
	req, refused := uuid.NewString(), uuid.NewString()
	if _, err := d.Start(ctx, ok.ID(), req, receipt.ProfileConfigure); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Start(ctx, refusing.ID(), refused, receipt.ProfileConfigure); err != nil {
		t.Fatal(err)
	}
	cancel() // the caller is gone; its trace goes on
	simenv.WaitFinal(t, d, receipt.ProfileConfigure, ok.ID(), req)
	simenv.WaitFinal(t, d, receipt.ProfileConfigure, refusing.ID(), refused)
	if err := d.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}

	requests := map[string]sdktrace.ReadOnlySpan{}
	for _, s := range sr.Ended() {
		if s.Name() != "oduflow.request" {
			continue
		}
		for _, kv := range s.Attributes() {
			if kv.Key == "oduflow.request_id" {
				requests[kv.Value.AsString()] = s
			}
		}
	}
	for id, wantStatus := range map[string]codes.Code{req: codes.Unset, refused: codes.Error} {
		s, found := requests[id]
		if !found {
			t.Fatalf("no ended request span for %s; spans %d", id, len(sr.Ended()))
		}
		if s.SpanContext().TraceID().String() != callerTrace || s.Parent().SpanID().String() != callerSpan {
			t.Errorf("request span %s: trace %s parent %s, want the caller's %s/%s", id,
				s.SpanContext().TraceID(), s.Parent().SpanID(), callerTrace, callerSpan)
		}
		if s.Status().Code != wantStatus {
			t.Errorf("request %s: span status %v, want %v", id, s.Status(), wantStatus)
		}
	}
	okSpan := requests[req].SpanContext().SpanID()
	steps := map[string]bool{}
	for _, s := range sr.Ended() {
		if s.Parent().SpanID() == okSpan {
			steps[s.Name()] = true
			if s.SpanContext().TraceID().String() != callerTrace {
				t.Errorf("step %s in another trace", s.Name())
			}
		}
	}
	for _, st := range []string{"claimed", "lease", "dispatch_recorded", "publish_sending", "publish_replied", "returned"} {
		if !steps["oduflow.step "+st] {
			t.Errorf("no step span %q under the request span; got %v", st, steps)
		}
	}

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	sums := map[string]int64{}
	hist := map[string]bool{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch data := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, dp := range data.DataPoints {
					sums[m.Name] += dp.Value
				}
			case metricdata.Histogram[float64]:
				hist[m.Name] = len(data.DataPoints) > 0
			}
		}
	}
	if sums["oduflow.starts"] != 2 || sums["oduflow.outcomes"] != 2 || sums["oduflow.requests.in_flight"] != 0 ||
		sums["oduflow.publications"] < 4 || !hist["oduflow.operation.duration"] {
		t.Fatalf("metrics: sums %v, histograms %v", sums, hist)
	}
}
