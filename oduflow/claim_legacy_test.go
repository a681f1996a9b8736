package oduflow

import (
	"context"
	"testing"

	"github.com/cockroachdb/errors"
	"github.com/google/uuid"

	"github.com/oduflow/oduflow-go/oduflow/claims"
	"github.com/oduflow/oduflow-go/receipt"
)

// TestLegacyErrorCode: a legacy claim with an error text decodes with CodeLegacyError.
func TestLegacyErrorCode(t *testing.T) {
	c, err := claims.Decode([]byte(`{"minion_id":"` + newMinionID() + `","request_id":"` + uuid.NewString() +
		`","jid":"20261201000000000000","state":"dispatched","created":1764547200,"error":"raw"}`))
	if err != nil || c.ErrorCode != claims.CodeLegacyError {
		t.Fatalf("%+v %v", c, err)
	}
}

func TestLegacyClaims(t *testing.T) {
	ctx := context.Background()
	clk := newFakeClock()
	d := newOffline(t, clk)
	disp := installFixture(t, d, "unprofiled_dispatched.json")
	ok := installFixture(t, d, "unprofiled_succeeded.json")
	pre := installFixture(t, d, "preprotocol_production_dispatched.json")
	preFailed := installFixture(t, d, "preprotocol_configure_failed.json")

	// Unprofiled claims are configuration only.
	r, err := d.Status(ctx, ok.MinionID, ok.RequestID, receipt.ProfileConfigure)
	if err != nil || r.Status != receipt.StatusSucceeded || r.Passed != 60 || *r.JID != ok.JID {
		t.Fatalf("%+v %v", r, err)
	}
	if _, err := d.Status(ctx, ok.MinionID, ok.RequestID, receipt.ProfileProduction); !errors.Is(err, errProfileMismatch) {
		t.Fatalf("legacy via production: %v", err)
	}
	if r, err := d.Start(ctx, ok.MinionID, ok.RequestID, receipt.ProfileConfigure); err != nil || r.Status != receipt.StatusSucceeded {
		t.Fatalf("start legacy: %+v %v", r, err)
	}
	// Dispatched without terminal result: unknown, quarantines.
	r, err = d.Status(ctx, disp.MinionID, disp.RequestID, receipt.ProfileConfigure)
	if err != nil || r.Status != receipt.StatusUnknown {
		t.Fatalf("%+v %v", r, err)
	}
	if q, _ := d.Quarantine(ctx, disp.MinionID); len(q) != 1 || q[0].RequestID != disp.RequestID {
		t.Fatalf("quarantine %+v", q)
	}
	// Pre-protocol claim: bound to its profile; unknown; quarantines.
	if r, err := d.Status(ctx, pre.MinionID, pre.RequestID, receipt.ProfileProduction); err != nil || r.Status != receipt.StatusUnknown {
		t.Fatalf("%+v %v", r, err)
	}
	if _, err := d.Status(ctx, pre.MinionID, pre.RequestID, receipt.ProfileConfigure); !errors.Is(err, errProfileMismatch) {
		t.Fatalf("%v", err)
	}
	if r, _ := d.Status(ctx, preFailed.MinionID, preFailed.RequestID, receipt.ProfileConfigure); r.Status != receipt.StatusFailed || r.Passed != 58 {
		t.Fatalf("%+v", r)
	}
	// No minion receipt will ever exist: Resume and Reconcile-from-minion are refused before any I/O.
	if _, err := d.Resume(ctx, disp.MinionID, disp.RequestID); !errors.Is(err, errLegacyClaim) {
		t.Fatalf("resume legacy: %v", err)
	}
	if _, err := d.Reconcile(ctx, pre.MinionID, pre.RequestID, FromMinion{}); !errors.Is(err, errLegacyClaim) {
		t.Fatalf("reconcile legacy from minion: %v", err)
	}
	// Only an operator assertion resolves them; it releases the quarantine.
	r, err = d.Reconcile(ctx, disp.MinionID, disp.RequestID, Assert{Outcome: receipt.StatusSucceeded, Passed: 60, Total: 60,
		Who: "ops", Why: "verified manually"})
	if err != nil || r.Status != receipt.StatusSucceeded {
		t.Fatalf("%+v %v", r, err)
	}
	if q, _ := d.Quarantine(ctx, disp.MinionID); len(q) != 0 {
		t.Fatalf("quarantine after assert %+v", q)
	}
	c := mustClaim(t, d, disp.RequestID)
	if !c.Legacy() || c.Profile != "" || c.Phase != claims.PhaseAsserted { // still a legacy unprofiled claim
		t.Fatalf("%+v", c)
	}
}

func TestLegacyQuarantineBlocksDispatch(t *testing.T) {
	t.Parallel()
	e := startSim(t)
	d := e.dispatcher()
	pre := installFixture(t, d, "preprotocol_production_dispatched.json")
	pm := newSimMinion(pre.MinionID)
	e.accept(pm)
	e.sim.AddMinion(pre.MinionID, pm.Handle)
	req := uuid.NewString()
	mustStart(t, d, receipt.ProfileConfigure, pre.MinionID, req)
	got := waitFinal(t, d, receipt.ProfileConfigure, pre.MinionID, req)
	if got.Status != receipt.StatusFailed || got.Total != 1 || mustClaim(t, d, req).ErrorCode != claims.CodeQuarantined || e.runs() != 0 {
		t.Fatalf("%+v runs %d", got, e.runs())
	}
	// The minion answering not_started never resolves a legacy claim.
	if _, err := d.Reconcile(context.Background(), pre.MinionID, pre.RequestID, FromMinion{}); !errors.Is(err, errLegacyClaim) {
		t.Fatal(err)
	}
}
