package oduflow

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/oduflow/oduflow-go/oduflow/oduflowtest/fakeminion"
	"github.com/oduflow/oduflow-go/receipt"
)

// TestObserveCapabilitiesAndProof: one dispatched request reports its capability check and its receipt
// proof through Hooks.Observe, once each, with durations that cover the calls' publications (a benchmark
// splits a request's time with them), and Ping reports its capability check too. The minion is a module
// without signed run returns, so the proof is an attest call (what an adopter or Resume always makes).
func TestObserveCapabilitiesAndProof(t *testing.T) {
	e := startSim(t)
	m := e.addMinion(fakeminion.WithoutRunProof())
	var mu sync.Mutex
	obs := map[string][]time.Duration{}
	var pub []time.Duration
	d := e.dispatcher(WithHooks(Hooks{Observe: func(_ context.Context, _ RequestRef, op string, dur time.Duration) {
		mu.Lock()
		defer mu.Unlock()
		obs[op] = append(obs[op], dur)
		if op == "publish" {
			pub = append(pub, dur)
		}
	}}))
	req := uuid.NewString()
	mustStart(t, d, receipt.ProfileConfigure, m.ID(), req)
	waitFinal(t, d, receipt.ProfileConfigure, m.ID(), req)
	if err := d.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	caps, proofs, pubs := obs["capabilities"], obs["proof"], len(pub)
	minPub := time.Duration(0)
	for i, p := range pub {
		if i == 0 || p < minPub {
			minPub = p
		}
	}
	mu.Unlock()
	if len(caps) != 1 || len(proofs) != 1 || pubs != 3 { // capabilities, run, attest
		t.Fatalf("observed capabilities %v, proof %v, %d publishes", caps, proofs, pubs)
	}
	if caps[0] < minPub || proofs[0] < minPub {
		t.Fatalf("capability check %v or proof %v shorter than a publication (%v)", caps[0], proofs[0], minPub)
	}
	if _, err := d.Ping(context.Background(), m.ID()); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(obs["capabilities"]) != 2 {
		t.Fatalf("Ping's capability check not observed: %v", obs["capabilities"])
	}
}

// traceKey stands for a tracer's context key (an OpenTelemetry span, a W3C trace context).
type traceKey struct{}

// TestHooksCarryCallerContextAndIdentity: every hook event of a request names it (minion, request id,
// profile, and the JID once the claim exists), and the worker's events carry the values of the Start
// call's ctx (the caller's trace) although that ctx was cancelled as soon as Start returned.
func TestHooksCarryCallerContextAndIdentity(t *testing.T) {
	t.Parallel()
	e := startSim(t)
	m := e.addMinion(fakeminion.WithoutRunProof()) // run and attest publications, both named
	req := uuid.NewString()
	type event struct {
		kind, what, trace string
		ref               RequestRef
	}
	var mu sync.Mutex
	var events []event
	rec := func(kind string) func(ctx context.Context, ref RequestRef, what string) {
		return func(ctx context.Context, ref RequestRef, what string) {
			tr, _ := ctx.Value(traceKey{}).(string)
			mu.Lock()
			events = append(events, event{kind: kind, what: what, trace: tr, ref: ref})
			mu.Unlock()
		}
	}
	step, pub := rec("step"), rec("published")
	d := e.dispatcher(WithHooks(Hooks{
		Step:      step,
		Published: func(ctx context.Context, ref RequestRef, fun, _ string) { pub(ctx, ref, fun) },
		Started: func(ctx context.Context, ref RequestRef, created bool) {
			rec("started")(ctx, ref, "")
		},
		Outcome: func(ctx context.Context, ref RequestRef, st receipt.Status, _ string) {
			rec("outcome")(ctx, ref, string(st))
		},
	}))
	ctx, cancel := context.WithCancel(context.WithValue(context.Background(), traceKey{}, "trace-1"))
	r, err := d.Start(ctx, m.ID(), req, receipt.ProfileConfigure)
	cancel() // the worker outlives the caller's ctx, keeping only its values
	if err != nil {
		t.Fatal(err)
	}
	final := waitFinal(t, d, receipt.ProfileConfigure, m.ID(), req)
	if err := d.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	if final.Status != receipt.StatusSucceeded || r.JID == nil {
		t.Fatalf("start %+v, final %+v", r, final)
	}
	want := RequestRef{Minion: m.ID(), RequestID: req, Profile: receipt.ProfileConfigure, JID: *r.JID}
	mu.Lock()
	defer mu.Unlock()
	kinds := map[string]int{}
	for _, ev := range events {
		if ev.what == "oduflow_job.capabilities" {
			// One publication serves the preflights of every request waiting for that minion.
			if !ev.ref.IsZero() {
				t.Errorf("batched capabilities publication names a request: %+v", ev.ref)
			}
			continue
		}
		kinds[ev.kind]++
		if ev.ref != want {
			t.Errorf("%s %q: request %+v, want %+v", ev.kind, ev.what, ev.ref, want)
		}
		if ev.trace != "trace-1" {
			t.Errorf("%s %q: caller's trace %q not carried", ev.kind, ev.what, ev.trace)
		}
	}
	if kinds["started"] != 1 || kinds["step"] < 5 || kinds["published"] < 2 || kinds["outcome"] != 1 {
		t.Fatalf("events %v", kinds)
	}
}
