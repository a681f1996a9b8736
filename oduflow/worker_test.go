package oduflow

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/oduflow/oduflow-go/oduflow/claims"
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
	if err := d.runDetachedWorker(context.Background(), []string{m.ID(), req}); err != nil {
		t.Fatal(err)
	}
	c := mustClaim(t, d, req)
	if c.Status != receipt.StatusUnknown || c.ErrorCode != claims.CodeWorkerLost || c.Quarantining() || e.runs() != 0 {
		t.Fatalf("%+v runs %d", c, e.runs())
	}
}

// Two claims of one client with the same JID (two processes, one microsecond): the second fails preflight.
// The first is still in flight (claimed: both are unresolved, which is the only way two processes can
// draw one JID; the preflight reads only the client's unresolved claims).
func TestJIDCollisionFailsPreflight(t *testing.T) {
	e := startSim(t)
	m := e.addMinion()
	d := e.dispatcher()
	ctx := context.Background()
	jid := string(d.jids.Next())
	first := &claims.Claim{Protocol: claimProtocol, MinionID: m.ID(), RequestID: uuid.NewString(), Profile: receipt.ProfileConfigure,
		Role: "roles.client_stack", JID: jid, Phase: claims.PhaseClaimed, CreatedAt: time.Now().UTC()}
	if err := d.store.Create(ctx, first); err != nil {
		t.Fatal(err)
	}
	c := &claims.Claim{Protocol: claimProtocol, MinionID: m.ID(), RequestID: uuid.NewString(), Profile: receipt.ProfileConfigure,
		Role: "roles.client_stack", JID: jid, Phase: claims.PhaseClaimed, CreatedAt: time.Now().UTC()}
	if err := d.store.Create(ctx, c); err != nil {
		t.Fatal(err)
	}
	if err := d.runDetachedWorker(ctx, []string{m.ID(), c.RequestID}); err != nil {
		t.Fatal(err)
	}
	got := mustClaim(t, d, c.RequestID)
	if got.ErrorCode != claims.CodeJIDCollision || got.Status != receipt.StatusFailed || e.runs() != 0 {
		t.Fatalf("%+v runs %d", got, e.runs())
	}
}
