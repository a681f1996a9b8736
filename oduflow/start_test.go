package oduflow

import (
	"context"
	"testing"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/google/uuid"

	"github.com/oduflow/oduflow-go/oduflow/claims"
	"github.com/oduflow/oduflow-go/oduflow/oduflowtest/fakeminion"
	"github.com/oduflow/oduflow-go/receipt"
	receiptproof "github.com/oduflow/oduflow-go/receipt/proof"
)

func TestStartSucceededAndFailed(t *testing.T) {
	e := startSim(t)
	m := e.addMinion(fakeminion.WithResult(receipt.ProfileProduction,
		fakeminion.Result{Status: receipt.StatusFailed, Passed: 2, Total: 3}))
	d := e.dispatcher()
	ctx := context.Background()

	req := uuid.NewString()
	first := mustStart(t, d, receipt.ProfileConfigure, m.ID(), req)
	if first.Status != receipt.StatusRunning || first.JID == nil {
		t.Fatalf("first start: %+v", first)
	}
	got := waitFinal(t, d, receipt.ProfileConfigure, m.ID(), req)
	if got.Status != receipt.StatusSucceeded || got.Passed != 1 || got.Total != 1 || *got.JID != *first.JID {
		t.Fatalf("configure: %+v", got)
	}
	again := mustStart(t, d, receipt.ProfileConfigure, m.ID(), req)
	if *again.JID != *first.JID || again.Status != receipt.StatusSucceeded || e.runs() != 1 {
		t.Fatalf("repeat: %+v runs=%d", again, e.runs())
	}

	req2 := uuid.NewString()
	mustStart(t, d, receipt.ProfileProduction, m.ID(), req2)
	got = waitFinal(t, d, receipt.ProfileProduction, m.ID(), req2)
	if got.Status != receipt.StatusFailed || got.Passed != 2 || got.Total != 3 {
		t.Fatalf("production: %+v", got)
	}
	if e.runs() != 2 || m.Runs() != 2 {
		t.Fatalf("runs: sim %d minion %d", e.runs(), m.Runs())
	}
	c := mustClaim(t, d, req2)
	if c.Role != "roles.client_production" || c.Evidence != evidenceReceipt || c.Quarantining() {
		t.Fatalf("claim: %+v", c)
	}
	if q, err := d.Quarantine(ctx, m.ID()); err != nil || len(q) != 0 {
		t.Fatalf("quarantine: %v %v", q, err)
	}
	// Published exactly: list target to that minion, [request_id, profile, "", {"__kwarg__": true,
	// "fence_token": the claim's token, "proof_nonce": a fresh nonce (the minion signs its run's
	// return)}] with the claim's JID.
	for _, p := range e.sim.Publications() {
		if p.Fun != funRun || p.JID != c.JID {
			continue
		}
		if len(p.Target) != 1 || p.Target[0] != m.ID() || len(p.Args) != 4 || p.Args[0] != req2 ||
			p.Args[1] != "production" || p.Args[2] != "" || !isFenceKwarg(p.Args[3], c.FenceToken, true) || c.FenceToken < 1 {
			t.Fatalf("publication: %+v", p)
		}
	}
}

func TestBusyTargetFailsPreflight(t *testing.T) {
	t.Parallel()
	e := startSim(t)
	m := e.addMinion(fakeminion.WithHold())
	tm := testTimers()
	tm.LeaseWait = 300 * time.Millisecond
	d := e.dispatcher(WithTimers(tm))
	a, b := uuid.NewString(), uuid.NewString()
	mustStart(t, d, receipt.ProfileConfigure, m.ID(), a)
	waitRuns(t, e, 1)
	mustStart(t, d, receipt.ProfileProduction, m.ID(), b) // another profile, same client lease
	got := waitFinal(t, d, receipt.ProfileProduction, m.ID(), b)
	if got.Status != receipt.StatusFailed || got.Passed != 0 || got.Total != 1 {
		t.Fatalf("busy: %+v", got)
	}
	if c := mustClaim(t, d, b); c.ErrorCode != claims.CodeLeaseBusy || c.WasDispatched() || c.Quarantining() {
		t.Fatalf("busy claim: %+v", c)
	}
	m.Release()
	if got := waitFinal(t, d, receipt.ProfileConfigure, m.ID(), a); got.Status != receipt.StatusSucceeded {
		t.Fatalf("a: %+v", got)
	}
	if e.runs() != 1 {
		t.Fatalf("runs %d", e.runs())
	}
}

func waitRuns(t testing.TB, e *simEnv, n int) {
	t.Helper()
	if !waitUntil(10*time.Second, func() bool { return e.runs() >= n }) {
		t.Fatalf("runs %d < %d", e.runs(), n)
	}
}

func TestCapabilityUnverified(t *testing.T) {
	t.Parallel()
	e := startSim(t)
	m := e.addMinion(fakeminion.WithProtocol(0))
	d := e.dispatcher()
	req := uuid.NewString()
	mustStart(t, d, receipt.ProfileConfigure, m.ID(), req)
	got := waitFinal(t, d, receipt.ProfileConfigure, m.ID(), req)
	if got.Status != receipt.StatusFailed || got.Total != 1 || e.runs() != 0 {
		t.Fatalf("%+v runs=%d", got, e.runs())
	}
	if c := mustClaim(t, d, req); c.ErrorCode != claims.CodeCapability || c.Quarantining() {
		t.Fatalf("%+v", c)
	}
}

func TestPing(t *testing.T) {
	t.Parallel()
	e := startSim(t)
	ok := e.addMinion()
	old := e.addMinion(fakeminion.WithProtocol(0))
	notReady := e.addMinion(fakeminion.WithPillarReady(false))
	d := e.dispatcher()
	ctx := context.Background()
	r, err := d.Ping(ctx, ok.ID())
	if err != nil || !r.Ready() || r.Protocol != 1 {
		t.Fatalf("ok: %+v %v", r, err)
	}
	r, err = d.Ping(ctx, old.ID())
	if err != nil || r.Ready() || !r.Reachable || r.Protocol != 0 {
		t.Fatalf("old: %+v %v", r, err)
	}
	r, err = d.Ping(ctx, notReady.ID())
	if err != nil || r.Ready() || !r.Reachable || r.PillarReady {
		t.Fatalf("not ready: %+v %v", r, err)
	}
	r, err = d.Ping(ctx, newMinionID())
	if err != nil || r.KeyAccepted || r.Reachable {
		t.Fatalf("unknown minion: %+v %v", r, err)
	}
	if _, err := d.Ping(ctx, "client-x"); !errors.Is(err, claims.ErrInvalidInput) {
		t.Fatalf("bad id: %v", err)
	}
	for _, p := range e.sim.Publications() {
		if len(p.Target) != 1 {
			t.Fatalf("ping target %+v", p)
		}
	}
}

func TestWindowSpentThenResume(t *testing.T) {
	t.Parallel()
	e := startSim(t)
	m := e.addMinion(fakeminion.WithHold())
	tm := testTimers()
	tm.ExecutionWait, tm.PollBudget = 1500*time.Millisecond, 3
	d := e.dispatcher(WithTimers(tm))
	ctx := context.Background()
	req := uuid.NewString()
	mustStart(t, d, receipt.ProfileConfigure, m.ID(), req)
	got := waitFinal(t, d, receipt.ProfileConfigure, m.ID(), req)
	if got.Status != receipt.StatusUnknown {
		t.Fatalf("%+v", got)
	}
	c := mustClaim(t, d, req)
	if c.ErrorCode != claims.CodeNoTrustworthyReturn || !c.Quarantining() {
		t.Fatalf("%+v", c)
	}
	if q, _ := d.Quarantine(ctx, m.ID()); len(q) != 1 {
		t.Fatalf("quarantine %v", q)
	}
	// A new request to the quarantined client (any profile) fails preflight; nothing is published.
	req2 := uuid.NewString()
	mustStart(t, d, receipt.ProfileProduction, m.ID(), req2)
	if got := waitFinal(t, d, receipt.ProfileProduction, m.ID(), req2); got.Status != receipt.StatusFailed || got.Total != 1 {
		t.Fatalf("quarantined start: %+v", got)
	}
	if c2 := mustClaim(t, d, req2); c2.ErrorCode != claims.CodeQuarantined {
		t.Fatalf("%+v", c2)
	}
	// Resume polls again; the minion finishes; unknown is replaced by the receipt.
	m.Release()
	if _, err := d.Resume(ctx, m.ID(), req); err != nil {
		t.Fatal(err)
	}
	if err := d.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	got, _ = d.Status(ctx, m.ID(), req, receipt.ProfileConfigure)
	if got.Status != receipt.StatusSucceeded || got.Passed != 1 {
		t.Fatalf("after resume: %+v", got)
	}
	if q, _ := d.Quarantine(ctx, m.ID()); len(q) != 0 || e.runs() != 1 {
		t.Fatalf("quarantine %v runs %d", q, e.runs())
	}
	// Resume of a resolved request is refused.
	_, err := d.Resume(ctx, m.ID(), req)
	if !errors.Is(err, ErrNotUnknown) {
		t.Fatalf("resume resolved: %v", err)
	}
	wantOneLine(t, "ErrNotUnknown", err)
}

// isFenceKwarg reports whether v is exactly Salt's keyword-argument map {"__kwarg__": true, "fence_token":
// token}, as published.
// isFenceKwarg: v is the run's keyword map, the fence token and (with withNonce: to a module that signs its
// run's return) a valid proof nonce, nothing else.
func isFenceKwarg(v any, token uint64, withNonce bool) bool {
	m, ok := v.(map[string]any)
	want := 2
	if withNonce {
		want = 3
		if n, _ := m["proof_nonce"].(string); receiptproof.ValidateNonce(n) != nil {
			return false
		}
	}
	if !ok || len(m) != want || m["__kwarg__"] != true {
		return false
	}
	switch n := m["fence_token"].(type) {
	case int64:
		return n > 0 && uint64(n) == token
	case uint64:
		return n == token
	}
	return false
}
