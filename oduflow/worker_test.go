package oduflow

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/oduflow/oduflow-go/receipt"
)

// A worker that starts after the launch grace (Status already says unknown) never dispatches.
func TestLateWorkerNeverDispatches(t *testing.T) {
	e := startSim(t)
	m := e.addMinion()
	clk := newFakeClock()
	d := e.dispatcher(WithDetachedWorkers(noopWorker(t)), withClock(clk))
	req := uuid.NewString()
	mustStart(t, d, receipt.ProfileConfigure, m.ID(), req)
	advanceWindows(d, clk, defaultLaunchGrace+time.Second)
	if st := status(t, d, mustClaim(t, d, req)); st != receipt.StatusUnknown {
		t.Fatalf("before: %s", st)
	}
	if err := d.RunWorker(context.Background(), []string{m.ID(), req}); err != nil {
		t.Fatal(err)
	}
	c := mustClaim(t, d, req)
	if c.Status != receipt.StatusUnknown || c.ErrorCode != codeWorkerLost || c.Quarantining() || e.runs() != 0 {
		t.Fatalf("%+v runs %d", c, e.runs())
	}
}

// Two claims of one client with the same JID (two processes, one microsecond): the second fails preflight.
func TestJIDCollisionFailsPreflight(t *testing.T) {
	e := startSim(t)
	m := e.addMinion()
	d := e.dispatcher()
	ctx := context.Background()
	first := uuid.NewString()
	r := mustStart(t, d, receipt.ProfileConfigure, m.ID(), first)
	waitFinal(t, d, receipt.ProfileConfigure, m.ID(), first)
	c := &Claim{Protocol: claimProtocol, MinionID: m.ID(), RequestID: uuid.NewString(), Profile: receipt.ProfileConfigure,
		Role: "roles.client_stack", JID: *r.JID, Phase: PhaseClaimed, CreatedAt: time.Now().UTC()}
	if err := d.store.Create(ctx, c); err != nil {
		t.Fatal(err)
	}
	if err := d.RunWorker(ctx, []string{m.ID(), c.RequestID}); err != nil {
		t.Fatal(err)
	}
	got := mustClaim(t, d, c.RequestID)
	if got.ErrorCode != codeJIDCollision || got.Status != receipt.StatusFailed || e.runs() != 1 {
		t.Fatalf("%+v runs %d", got, e.runs())
	}
}
