package oduflow

import (
	"context"
	"errors"
	"maps"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/oduflow/oduflow-go/oduflow/claims"
	"github.com/oduflow/oduflow-go/oduflow/oduflowtest/fakeminion"
	"github.com/oduflow/oduflow-go/receipt"
)

// A module whose runtime guard fails: Ping is not ready (RuntimeGuard false) and a Start ends at once,
// failed 0/1 with runtime_guard_failed (the preflight's), nothing published.
func TestRuntimeGuardFailureNotReadyAndPreflight(t *testing.T) {
	e := startSim(t)
	m := e.addMinion(fakeminion.WithRuntimeGuardFailure("salt_code_paths: State.call_chunk changed"))
	d := e.dispatcher()
	ctx := context.Background()
	r, err := d.Ping(ctx, m.ID())
	if err != nil {
		t.Fatal(err)
	}
	if r.RuntimeGuard || r.Ready() || !r.Proof || r.Protocol != 1 {
		t.Fatalf("readiness %+v ready %v", r, r.Ready())
	}
	req := uuid.NewString()
	mustStart(t, d, receipt.ProfileConfigure, m.ID(), req)
	got := waitFinal(t, d, receipt.ProfileConfigure, m.ID(), req)
	if got.Status != receipt.StatusFailed || got.Passed != 0 || got.Total != 1 || got.ErrorCode != claims.CodeRuntimeGuard {
		t.Fatalf("%+v", got)
	}
	if n := e.runs(); n != 0 {
		t.Fatalf("published %d runs", n)
	}
}

// Every guard failure the module can report reaches the operator: Ping carries the module's reason
// verbatim (RuntimeGuardError) and is not ready, and a Start to that minion fails 0/1 runtime_guard_failed
// at the preflight with nothing published. A minion whose guard holds reports the forms it found
// (RuntimeGuardForms) and no reason.
func TestRuntimeGuardReasonPerCheck(t *testing.T) {
	t.Parallel()
	e := startSim(t)
	d := e.dispatcher()
	ctx := context.Background()
	for _, reason := range fakeminion.GuardFailureReasons() {
		m := e.addMinion(fakeminion.WithRuntimeGuardFailure(reason))
		r, err := d.Ping(ctx, m.ID())
		if err != nil {
			t.Fatal(err)
		}
		if r.Ready() || r.RuntimeGuard || r.RuntimeGuardError != reason {
			t.Fatalf("%s: readiness %+v", reason, r)
		}
		req := uuid.NewString()
		mustStart(t, d, receipt.ProfileConfigure, m.ID(), req)
		got := waitFinal(t, d, receipt.ProfileConfigure, m.ID(), req)
		if got.Status != receipt.StatusFailed || got.Passed != 0 || got.Total != 1 || got.ErrorCode != claims.CodeRuntimeGuard {
			t.Fatalf("%s: %+v", reason, got)
		}
	}
	if n := e.runs(); n != 0 {
		t.Fatalf("published %d runs", n)
	}
	current := map[string]string{"salt.state.State.call_parallel": "3006.10+, 3007.2+, 3008"}
	old := map[string]string{"salt.state.State.call_parallel": "3006.0-3006.9, 3007.0-3007.1"}
	for _, forms := range []map[string]string{current, old} {
		m := e.addMinion(fakeminion.WithGuardForms(forms))
		r, err := d.Ping(ctx, m.ID())
		if err != nil {
			t.Fatal(err)
		}
		if !r.Ready() || r.RuntimeGuardError != "" || !maps.Equal(r.RuntimeGuardForms, forms) {
			t.Fatalf("readiness %+v, want forms %v", r, forms)
		}
	}
}

// A hostile capabilities answer cannot grow a Readiness: at most maxGuardForms forms, each bounded and
// printable; a non-string label or a non-map is dropped.
func TestGuardFormsBounded(t *testing.T) {
	big := map[string]any{}
	for i := range 100 {
		big[strconv.Itoa(i)+strings.Repeat("x", 1000)] = "\x00" + strings.Repeat("y", 1000)
	}
	forms := guardForms(big)
	if len(forms) != maxGuardForms {
		t.Fatalf("%d forms", len(forms))
	}
	for k, v := range forms {
		if len(k) > maxGuardReason+8 || len(v) > maxGuardReason+8 || strings.ContainsRune(v, 0) {
			t.Fatalf("unbounded form %d/%d", len(k), len(v))
		}
	}
	if guardForms(map[string]any{"a": 1}) != nil || guardForms("x") != nil || guardForms(nil) != nil {
		t.Fatal("a form that is not a string label was kept")
	}
}

// Ping's readiness needs every capability of a new request: the runtime guard alone missing is not ready.
func TestReadinessNeedsRuntimeGuard(t *testing.T) {
	all := Readiness{KeyAccepted: true, Reachable: true, Protocol: 1, PillarReady: true, Proof: true, Fencing: true,
		RuntimeGuard: true, ProfileTable: true}
	if !all.Ready() {
		t.Fatal("everything present, not ready")
	}
	for name, r := range map[string]Readiness{
		"no runtime guard": func() Readiness { x := all; x.RuntimeGuard = false; return x }(),
		"no fencing":       func() Readiness { x := all; x.Fencing = false; return x }(),
		"no proof":         func() Readiness { x := all; x.Proof = false; return x }(),
		"another table":    func() Readiness { x := all; x.ProfileTable = false; return x }(),
	} {
		if r.Ready() {
			t.Fatalf("%s: ready", name)
		}
	}
	if caps := parseCapabilities(map[string]any{"protocol": int64(1), "runtime_guard": false}); caps.RuntimeGuard {
		t.Fatal("runtime_guard false read as true")
	}
	if caps := parseCapabilities(map[string]any{"protocol": int64(1), "runtime_guard": true}); !caps.RuntimeGuard {
		t.Fatal("runtime_guard true read as false")
	}
}

// A run the minion refuses (capabilities fine, the run's own guard check fails: an error answer, retcode
// 1, nothing recorded) is final at once: the worker fences the publication, the minion signs that it
// never ran, and the request is failed 0/1 with the refusal's code, never a wait for the whole window
// (8 s here, 7,200 s in production) ending unknown.
func TestRunRefusedIsFinalAtOnce(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		refusal string
		code    claims.ErrorCode
	}{
		"unprotected": {"oduflow_job: refusing to run unprotected: jid_injection: __pub_jid not the publication's", claims.CodeRuntimeGuard},
		"other":       {"oduflow_job: caller execution options are refused", claims.CodeMinionRefused},
	} {
		t.Run(name, func(t *testing.T) {
			e := startSim(t)
			m := e.addMinion(fakeminion.WithRunRefusal(tc.refusal))
			d := e.dispatcher()
			req := uuid.NewString()
			t0 := time.Now()
			mustStart(t, d, receipt.ProfileConfigure, m.ID(), req)
			got := waitFinal(t, d, receipt.ProfileConfigure, m.ID(), req)
			el := time.Since(t0)
			if got.Status != receipt.StatusFailed || got.Passed != 0 || got.Total != 1 || got.ErrorCode != tc.code {
				t.Fatalf("%+v after %s", got, el)
			}
			if el > 4*time.Second {
				t.Fatalf("final after %s: not at once", el)
			}
			c := mustClaim(t, d, req)
			if c.Evidence != evidenceFenced || c.Quarantining() || e.runs() != 1 || m.Calls(funFence) != 1 {
				t.Fatalf("claim %+v runs %d fences %d", c, e.runs(), m.Calls(funFence))
			}
			t.Logf("refused run final after %s", el)
		})
	}
}

// A bus that delivers nothing while the master acknowledges publications is a typed gap: Hooks.BusGap
// gets bus_stalled, and a new Start is refused with nothing written (the bus is not live) until an event
// arrives again.
func TestBusStalledIsTypedGap(t *testing.T) {
	t.Parallel()
	e := startSim(t)
	m := e.addMinion()
	var mu sync.Mutex
	gaps := map[string]int{}
	tm := testTimers()
	tm.BusStall = 300 * time.Millisecond
	d := e.dispatcher(WithTimers(tm), WithHooks(Hooks{BusGap: func(_ context.Context, reason string) {
		mu.Lock()
		gaps[reason]++
		mu.Unlock()
	}}))
	ctx := context.Background()
	first := uuid.NewString()
	mustStart(t, d, receipt.ProfileConfigure, m.ID(), first)
	if got := waitFinal(t, d, receipt.ProfileConfigure, m.ID(), first); got.Status != receipt.StatusSucceeded {
		t.Fatalf("%+v", got)
	}
	e.sim.StallEventBus(true)
	req := uuid.NewString()
	mustStart(t, d, receipt.ProfileConfigure, m.ID(), req) // the bus was live when it was checked
	if !waitUntil(5*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return gaps[busGapStalled] > 0
	}) {
		mu.Lock()
		defer mu.Unlock()
		t.Fatalf("no bus_stalled gap; gaps %v", gaps)
	}
	next := uuid.NewString()
	if _, err := d.Start(ctx, m.ID(), next, receipt.ProfileConfigure); !errors.Is(err, ErrNotReady) || !errors.Is(err, errEventBus) {
		t.Fatalf("start on a stalled bus: %v", err)
	}
	noClaim(t, d, next)
	// The request in flight: its preflight call got no return while the bus was stalled; it failed before
	// publishing, and says why.
	if got := waitFinal(t, d, receipt.ProfileConfigure, m.ID(), req); got.Status != receipt.StatusFailed ||
		got.ErrorCode != claims.CodeEventBus || e.runs() != 1 {
		t.Fatalf("in flight during the stall: %+v, runs %d", got, e.runs())
	}
	e.sim.StallEventBus(false)
	d.hub.stalledAt.Store(time.Now().Add(-stallHold).UnixNano()) // the hold is over (30 s in production)
	mustStart(t, d, receipt.ProfileConfigure, m.ID(), next)
	if got := waitFinal(t, d, receipt.ProfileConfigure, m.ID(), next); got.Status != receipt.StatusSucceeded {
		t.Fatalf("after the stall: %+v", got)
	}
}
