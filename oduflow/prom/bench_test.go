package prom_test

import (
	"context"
	"testing"

	"github.com/google/uuid"

	"github.com/oduflow/oduflow-go/oduflow"
	"github.com/oduflow/oduflow-go/oduflow/oduflowtest/simenv"
	"github.com/oduflow/oduflow-go/oduflow/prom"
	"github.com/oduflow/oduflow-go/receipt"
)

// BenchmarkStartCost: one request from Start to its final status, against the simulator and a fake
// minion, without hooks and with the Prometheus collector's. Each round runs both sub-benchmarks
// in turn, so the baseline is interleaved with the measured case; compare the medians of the rounds:
//
//	go test -c -o /tmp/prom.test && for i in 1 2 3 4 5 6 7; do
//	  /tmp/prom.test -test.run '^$' -test.bench 'BenchmarkStartCost|BenchmarkHooksPerRequest' -test.benchtime 100x
//	done
//
// (one process per round: -count would run each sub-benchmark's rounds back to back, not interleaved).
// BenchmarkHooksPerRequest is the hooks' own CPU for the events of one request, without the request.
func BenchmarkStartCost(b *testing.B) {
	for _, tc := range []struct {
		name  string
		hooks func() oduflow.Hooks
	}{
		{"none", func() oduflow.Hooks { return oduflow.Hooks{} }},
		{"prom", func() oduflow.Hooks { return prom.New().Hooks() }},
	} {
		b.Run(tc.name, func(b *testing.B) {
			e := simenv.Start(b)
			m := e.AddMinion()
			d := e.Dispatcher(oduflow.WithHooks(tc.hooks()))
			ctx := context.Background()
			warm := uuid.NewString() // the first request pays the connections and the key pinning
			if _, err := d.Start(ctx, m.ID(), warm, receipt.ProfileConfigure); err != nil {
				b.Fatal(err)
			}
			simenv.WaitFinal(b, d, receipt.ProfileConfigure, m.ID(), warm)
			b.ResetTimer()
			for b.Loop() {
				req := uuid.NewString()
				if _, err := d.Start(ctx, m.ID(), req, receipt.ProfileConfigure); err != nil {
					b.Fatal(err)
				}
				if r := simenv.WaitFinal(b, d, receipt.ProfileConfigure, m.ID(), req); r.Status != receipt.StatusSucceeded {
					b.Fatalf("%+v", r)
				}
			}
		})
	}
}

// BenchmarkHooksPerRequest: the collector's CPU for the hook events one dispatched request emits (a
// Start, the worker's steps, four publications, the observed durations, the outcome), called directly.
func BenchmarkHooksPerRequest(b *testing.B) {
	h := prom.New().Hooks()
	minion := "client-" + uuid.NewString()
	b.ReportAllocs()
	for b.Loop() {
		simenv.EmitRequestEvents(b.Context(), h, minion)
	}
}
