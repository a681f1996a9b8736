package oduflow

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/google/uuid"

	"github.com/oduflow/oduflow-go/oduflow/claims"
	"github.com/oduflow/oduflow-go/receipt"
)

// newOffline builds a dispatcher whose network must never be used (status rows need none).
func newOffline(t *testing.T, clk clockSource) *Dispatcher {
	t.Helper()
	nn := noNetwork{t}
	d, err := New(nn, nn, WithClaimDir(claimDir(t)), withClock(clk), WithLogger(quietLogger()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close(closedContext()) })
	return d
}

func putClaim(t *testing.T, d *Dispatcher, c *claims.Claim) {
	t.Helper()
	if err := d.store.Create(context.Background(), c); err != nil {
		t.Fatal(err)
	}
}

func newClaim(clk clockSource, p receipt.Profile) *claims.Claim {
	return &claims.Claim{Protocol: claimProtocol, MinionID: newMinionID(), RequestID: uuid.NewString(), Profile: p,
		Role: "roles.client_stack", JID: "20261129120000000001", Phase: claims.PhaseClaimed, CreatedAt: clk.Now()}
}

func TestStatusContractRows(t *testing.T) {
	ctx := context.Background()
	clk := newFakeClock()
	d := newOffline(t, clk)
	fs := mustFileStore(t, d)

	t.Run("no claim: not_started, jid null", func(t *testing.T) {
		m, r := newMinionID(), uuid.NewString()
		resp, err := d.Status(ctx, m, r, receipt.ProfileConfigure)
		if err != nil || resp.Status != receipt.StatusNotStarted || resp.JID != nil {
			t.Fatalf("%+v %v", resp, err)
		}
		b, _ := json.Marshal(resp)
		want := `{"minion_id":"` + m + `","request_id":"` + r + `","jid":null,"status":"not_started","passed":0,"total":0,"error_code":""}`
		if string(b) != want {
			t.Fatalf("json %s", b)
		}
	})

	t.Run("launch grace boundaries 29s/31s", func(t *testing.T) {
		c := newClaim(clk, receipt.ProfileConfigure)
		putClaim(t, d, c)
		clk.Set(c.CreatedAt.Add(29 * time.Second))
		setHostClock(t, clk, mustClaim(t, d, c.RequestID).CreatedClock, 29*time.Second)
		if st := status(t, d, c); st != receipt.StatusRunning {
			t.Fatalf("29s: %s", st)
		}
		clk.Set(c.CreatedAt.Add(31 * time.Second))
		setHostClock(t, clk, mustClaim(t, d, c.RequestID).CreatedClock, 31*time.Second)
		if st := status(t, d, c); st != receipt.StatusUnknown {
			t.Fatalf("31s: %s", st)
		}
	})

	t.Run("lock held: running; expiry boundaries 7259s/7261s", func(t *testing.T) {
		c := newClaim(clk, receipt.ProfileProduction)
		c.Role = "roles.client_production"
		disp := c.CreatedAt.Add(10 * time.Second)
		c.DispatchedAt = &disp
		c.Phase = claims.PhaseDispatched
		putClaim(t, d, c)
		lk, err := fs.TryRequestLock(ctx, c.RequestID)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = lk.Release() }()
		clk.Set(disp.Add(7259 * time.Second))
		setHostClock(t, clk, mustClaim(t, d, c.RequestID).DispatchedClock, 7259*time.Second)
		if st := status(t, d, c); st != receipt.StatusRunning {
			t.Fatalf("7259s: %s", st)
		}
		clk.Set(disp.Add(7261 * time.Second))
		setHostClock(t, clk, mustClaim(t, d, c.RequestID).DispatchedClock, 7261*time.Second)
		if st := status(t, d, c); st != receipt.StatusUnknown {
			t.Fatalf("7261s: %s", st)
		}
		_ = lk.Release()
		clk.Set(disp.Add(100 * time.Second))
		setHostClock(t, clk, mustClaim(t, d, c.RequestID).DispatchedClock, 100*time.Second)
		if st := status(t, d, c); st != receipt.StatusUnknown {
			t.Fatalf("lock free after grace: %s", st)
		}
	})

	t.Run("terminal: recorded status and counts", func(t *testing.T) {
		for _, st := range []receipt.Status{receipt.StatusSucceeded, receipt.StatusFailed, receipt.StatusUnknown} {
			c := newClaim(clk, receipt.ProfileConfigure)
			c.Phase, c.Status, c.Passed, c.Total = claims.PhaseTerminal, st, 2, 3
			if st == receipt.StatusSucceeded {
				c.Passed = 3
			}
			putClaim(t, d, c)
			resp, err := d.Status(ctx, c.MinionID, c.RequestID, receipt.ProfileConfigure)
			if err != nil || resp.Status != st || resp.Total != 3 || resp.JID == nil || *resp.JID != c.JID {
				t.Fatalf("%s: %+v %v", st, resp, err)
			}
		}
	})
}

func status(t *testing.T, d *Dispatcher, c *claims.Claim) receipt.Status {
	t.Helper()
	resp, err := d.Status(context.Background(), c.MinionID, c.RequestID, c.EffectiveProfile())
	if err != nil {
		t.Fatal(err)
	}
	return resp.Status
}

func TestMisuseRefused(t *testing.T) {
	ctx := context.Background()
	clk := newFakeClock()
	d := newOffline(t, clk)
	c := newClaim(clk, receipt.ProfileConfigure)
	putClaim(t, d, c)
	_, err := d.Status(ctx, c.MinionID, c.RequestID, receipt.ProfileProduction)
	var me *mismatchError
	if !errors.Is(err, errProfileMismatch) || !errors.As(err, &me) || me.Bound != "configure" {
		t.Fatalf("cross-profile status: %v", err)
	}
	if _, err := d.Start(ctx, c.MinionID, c.RequestID, receipt.ProfileProduction); !errors.Is(err, errProfileMismatch) {
		t.Fatalf("cross-profile start: %v", err)
	}
	other := newMinionID()
	if _, err := d.Status(ctx, other, c.RequestID, receipt.ProfileConfigure); !errors.Is(err, errMinionMismatch) {
		t.Fatalf("cross-minion status: %v", err)
	}
	if _, err := d.Start(ctx, other, c.RequestID, receipt.ProfileConfigure); !errors.Is(err, errMinionMismatch) {
		t.Fatalf("cross-minion start: %v", err)
	}
	if _, err := d.Reconcile(ctx, other, c.RequestID, Assert{Outcome: receipt.StatusFailed, Who: "op", Why: "x"}); !errors.Is(err, errMinionMismatch) {
		t.Fatalf("cross-minion reconcile: %v", err)
	}
	bad := []struct{ m, r string }{
		{"client-ABC", c.RequestID}, {c.MinionID, "not-a-uuid"}, {"5b2f8c1e-3c4d-4e5f-8a9b-0c1d2e3f4a5b", c.RequestID},
		{c.MinionID, "5B2F8C1E-3C4D-4E5F-8A9B-0C1D2E3F4A5B"},
	}
	for _, b := range bad {
		if _, err := d.Start(ctx, b.m, b.r, receipt.ProfileConfigure); !errors.Is(err, claims.ErrInvalidInput) {
			t.Fatalf("start %q %q: %v", b.m, b.r, err)
		}
		if _, err := d.Status(ctx, b.m, b.r, receipt.ProfileConfigure); !errors.Is(err, claims.ErrInvalidInput) {
			t.Fatalf("status %q %q: %v", b.m, b.r, err)
		}
	}
	if _, err := d.Start(ctx, "client-ABC", c.RequestID, receipt.ProfileConfigure); !errors.Is(err, receipt.ErrInvalidID) {
		t.Fatalf("wraps receipt id error: %v", err)
	}
	if _, err := d.Start(ctx, c.MinionID, uuid.NewString(), "state.apply"); !errors.Is(err, claims.ErrInvalidInput) {
		t.Fatalf("bad profile: %v", err)
	}
	if _, err := d.Start(ctx, c.MinionID, uuid.NewString(), receipt.ProfileCustom); !errors.Is(err, claims.ErrInvalidInput) {
		t.Fatalf("custom through Start: %v", err)
	}
}

// TestResponseStringShowsTheJID: %v and %+v of a Response print the JID's value, never the pointer's
// address, and "null" before there is one.
func TestResponseStringShowsTheJID(t *testing.T) {
	jid := "20261207011500123456"
	r := Response{MinionID: "web01.example", RequestID: "0d1c5b2e-0000-4000-8000-000000000001", JID: &jid,
		Status: receipt.StatusFailed, Passed: 2, Total: 3, ErrorCode: claims.CodeQuarantined}
	for _, got := range []string{fmt.Sprintf("%v", r), fmt.Sprintf("%+v", r), r.String()} {
		if !strings.Contains(got, "jid="+jid) || strings.Contains(got, "0x") || !strings.Contains(got, "error_code=quarantined") {
			t.Errorf("got %q", got)
		}
	}
	if got := (Response{Status: receipt.StatusNotStarted}).String(); !strings.Contains(got, "jid=null") {
		t.Errorf("not started: %q", got)
	}
}
