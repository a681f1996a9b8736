package prom_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/oduflow/oduflow-go/internal/testwait"
	"github.com/oduflow/oduflow-go/oduflow"
	"github.com/oduflow/oduflow-go/oduflow/claims"
	"github.com/oduflow/oduflow-go/oduflow/oduflowtest/fakeminion"
	"github.com/oduflow/oduflow-go/oduflow/oduflowtest/simenv"
	"github.com/oduflow/oduflow-go/oduflow/prom"
	"github.com/oduflow/oduflow-go/receipt"
)

// TestCollectorCountsARequest: a dispatched request, asked twice, and a refused one, against the
// simulator and fake minions, show in the registry as the package documents: starts by created, the
// publications, outcomes by status and error code, durations, in flight back to zero.
func TestCollectorCountsARequest(t *testing.T) {
	e := simenv.Start(t)
	ok := e.AddMinion()
	refusing := e.AddMinion(fakeminion.WithRunRefusal("oduflow_job: caller execution options are refused"))
	c := prom.New()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	d := e.Dispatcher(oduflow.WithHooks(c.Hooks()))
	ctx := context.Background()

	req := uuid.NewString()
	if _, err := d.Start(ctx, ok.ID(), req, receipt.ProfileConfigure); err != nil {
		t.Fatal(err)
	}
	if got := testutil.ToFloat64(c.InFlightGauge()); got != 1 {
		t.Fatalf("in flight after Start: %v", got)
	}
	if r := simenv.WaitFinal(t, d, receipt.ProfileConfigure, ok.ID(), req); r.Status != receipt.StatusSucceeded {
		t.Fatalf("%+v", r)
	}
	if _, err := d.Start(ctx, ok.ID(), req, receipt.ProfileConfigure); err != nil { // answered from its claim
		t.Fatal(err)
	}
	refused := uuid.NewString()
	if _, err := d.Start(ctx, refusing.ID(), refused, receipt.ProfileConfigure); err != nil {
		t.Fatal(err)
	}
	rr := simenv.WaitFinal(t, d, receipt.ProfileConfigure, refusing.ID(), refused)
	if err := d.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if rr.Status != receipt.StatusFailed || rr.ErrorCode != claims.CodeMinionRefused {
		t.Fatalf("refused run: %+v", rr)
	}

	want := `
# HELP oduflow_starts_total Start calls by profile; created=true when the call wrote the claim.
# TYPE oduflow_starts_total counter
oduflow_starts_total{created="false",profile="configure"} 1
oduflow_starts_total{created="true",profile="configure"} 2
# HELP oduflow_outcomes_total Final outcomes committed by this process, by profile, status and error code.
# TYPE oduflow_outcomes_total counter
oduflow_outcomes_total{error_code="",profile="configure",status="succeeded"} 1
oduflow_outcomes_total{error_code="` + string(rr.ErrorCode) + `",profile="configure",status="failed"} 1
# HELP oduflow_requests_in_flight Requests created by this process that have no final outcome here yet.
# TYPE oduflow_requests_in_flight gauge
oduflow_requests_in_flight 0
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "oduflow_starts_total",
		"oduflow_outcomes_total", "oduflow_requests_in_flight"); err != nil {
		t.Fatal(err)
	}
	for fun, min := range map[string]float64{"oduflow_job.run": 2, "oduflow_job.attest": 1} {
		if got := testutil.ToFloat64(c.PublicationsCounter().WithLabelValues(fun, "ok")); got < min {
			t.Errorf("publications %s ok = %v, want >= %v", fun, got, min)
		}
	}
	for _, op := range []string{"start", "status", "publish", "proof", "dispatch_to_final"} {
		if n := testutil.CollectAndCount(c.DurationsHistogram().WithLabelValues(op).(prometheus.Histogram)); n != 1 {
			t.Errorf("no %q duration series", op)
		}
	}
	if problems, err := testutil.GatherAndLint(reg); err != nil || len(problems) != 0 {
		t.Fatalf("lint: %v %v", problems, err)
	}
}

// TestCollectorCountsBusStall: a bus that delivers nothing while the master acknowledges publications
// shows as oduflow_bus_gaps_total{reason="bus_stalled"}.
func TestCollectorCountsBusStall(t *testing.T) {
	e := simenv.Start(t)
	m := e.AddMinion()
	c := prom.New()
	tm := simenv.Timers()
	tm.BusStall = 300 * time.Millisecond
	d := e.Dispatcher(oduflow.WithHooks(c.Hooks()), oduflow.WithTimers(tm))
	ctx := context.Background()
	first := uuid.NewString()
	if _, err := d.Start(ctx, m.ID(), first, receipt.ProfileConfigure); err != nil {
		t.Fatal(err)
	}
	simenv.WaitFinal(t, d, receipt.ProfileConfigure, m.ID(), first)
	e.Master().StallEventBus(true)
	defer e.Master().StallEventBus(false)
	if _, err := d.Start(ctx, m.ID(), uuid.NewString(), receipt.ProfileConfigure); err != nil {
		t.Fatal(err)
	}
	stalled := c.BusGapsCounter().WithLabelValues("bus_stalled")
	testwait.Until(t, "no bus_stalled gap counted", 10*time.Second, func() bool { return testutil.ToFloat64(stalled) >= 1 })
}
