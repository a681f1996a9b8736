package prom

import (
	"context"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/oduflow/oduflow-go/oduflow"
	"github.com/oduflow/oduflow-go/receipt"
)

// Collector is a prometheus.Collector fed by the Hooks it returns. Register it once, and pass Hooks()
// to oduflow.WithHooks of one or more Dispatchers.
type Collector struct {
	starts       *prometheus.CounterVec
	publications *prometheus.CounterVec
	outcomes     *prometheus.CounterVec
	durations    *prometheus.HistogramVec
	inFlight     prometheus.Gauge
	adoptions    prometheus.Counter
	unverified   *prometheus.CounterVec
	busGaps      *prometheus.CounterVec

	mu      sync.Mutex
	pending map[string]struct{} // request ids created here without an outcome yet
}

// Option configures New.
type Option func(*config)

type config struct {
	namespace string
	buckets   []float64
}

// WithNamespace sets the metric names' prefix (default "oduflow").
func WithNamespace(ns string) Option { return func(c *config) { c.namespace = ns } }

// WithBuckets sets the duration histogram's buckets in seconds (default: 1 ms to about 2 hours, the
// longest execution window).
func WithBuckets(b []float64) Option {
	return func(c *config) { c.buckets = append([]float64(nil), b...) }
}

// defaultBuckets covers a publish round trip (ms) up to a whole execution window (hours).
var defaultBuckets = []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300,
	900, 1800, 3600, 7200}

// New returns a Collector; nothing is registered.
func New(opts ...Option) *Collector {
	cfg := config{namespace: "oduflow", buckets: defaultBuckets}
	for _, o := range opts {
		o(&cfg)
	}
	ns := cfg.namespace
	return &Collector{
		starts: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "starts_total",
			Help: "Start calls by profile; created=true when the call wrote the claim."}, []string{"profile", "created"}),
		publications: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "publications_total",
			Help: "Publications to the Salt master by function and result (ok or an error code)."},
			[]string{"function", "result"}),
		outcomes: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "outcomes_total",
			Help: "Final outcomes committed by this process, by profile, status and error code."},
			[]string{"profile", "status", "error_code"}),
		durations: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: ns, Name: "operation_duration_seconds",
			Help: "Durations of the dispatcher's operations (start, status, publish, poll, proof, capabilities, " +
				"dispatch_to_final, adoption).", Buckets: cfg.buckets}, []string{"op"}),
		inFlight: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Name: "requests_in_flight",
			Help: "Requests created by this process that have no final outcome here yet."}),
		adoptions: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Name: "adoptions_total",
			Help: "Requests adopted (their worker was gone) and brought to a final commit by this process."}),
		unverified: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "unverified_events_total",
			Help: "Returns that are never evidence (forged, stray or unproven), by reason."}, []string{"reason"}),
		busGaps: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "bus_gaps_total",
			Help: "Gaps of the master event-bus subscription by reason (bus_stalled, disconnected, other)."},
			[]string{"reason"}),
		pending: map[string]struct{}{},
	}
}

func (c *Collector) collectors() []prometheus.Collector {
	return []prometheus.Collector{c.starts, c.publications, c.outcomes, c.durations, c.inFlight, c.adoptions,
		c.unverified, c.busGaps}
}

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, m := range c.collectors() {
		m.Describe(ch)
	}
}

// Collect implements prometheus.Collector.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	for _, m := range c.collectors() {
		m.Collect(ch)
	}
}

// Hooks returns the oduflow.Hooks that feed c. They only update in-memory metrics: fast and
// goroutine-safe, as the Hooks contract wants.
func (c *Collector) Hooks() oduflow.Hooks {
	return oduflow.Hooks{
		Started: func(_ context.Context, req oduflow.RequestRef, created bool) {
			c.starts.WithLabelValues(string(req.Profile), strconv.FormatBool(created)).Inc()
			if created {
				c.track(req.RequestID, true)
			}
		},
		Published: func(_ context.Context, _ oduflow.RequestRef, fun, result string) {
			c.publications.WithLabelValues(fun, result).Inc()
		},
		Outcome: func(_ context.Context, req oduflow.RequestRef, st receipt.Status, code string) {
			c.outcomes.WithLabelValues(string(req.Profile), string(st), code).Inc()
			c.track(req.RequestID, false)
		},
		Observe: func(_ context.Context, _ oduflow.RequestRef, op string, d time.Duration) {
			c.durations.WithLabelValues(op).Observe(d.Seconds())
			if op == "adoption" {
				c.adoptions.Inc()
			}
		},
		UnverifiedEvent: func(_ context.Context, _ oduflow.RequestRef, reason string) {
			c.unverified.WithLabelValues(reason).Inc()
		},
		BusGap: func(_ context.Context, reason string) {
			c.busGaps.WithLabelValues(reason).Inc()
		},
	}
}

// track adds (open) or removes a request created here, keeping the in-flight gauge equal to the set's
// size: an outcome of a request this process did not create (reconciliation, adoption) changes nothing.
func (c *Collector) track(request string, open bool) {
	if request == "" {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if open {
		c.pending[request] = struct{}{}
	} else {
		delete(c.pending, request)
	}
	c.inFlight.Set(float64(len(c.pending)))
}

// InFlightGauge, PublicationsCounter, DurationsHistogram and BusGapsCounter expose c's metrics, for tests
// (prometheus/testutil) and for a program that reads them directly.
func (c *Collector) InFlightGauge() prometheus.Gauge { return c.inFlight }

// PublicationsCounter is oduflow_publications_total (see InFlightGauge).
func (c *Collector) PublicationsCounter() *prometheus.CounterVec { return c.publications }

// DurationsHistogram is oduflow_operation_duration_seconds (see InFlightGauge).
func (c *Collector) DurationsHistogram() *prometheus.HistogramVec { return c.durations }

// BusGapsCounter is oduflow_bus_gaps_total (see InFlightGauge).
func (c *Collector) BusGapsCounter() *prometheus.CounterVec { return c.busGaps }
