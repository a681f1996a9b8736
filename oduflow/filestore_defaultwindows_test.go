package oduflow

import (
	"context"
	"testing"
	"time"

	"github.com/oduflow/oduflow-go/internal/filestorehook"
	"github.com/oduflow/oduflow-go/internal/hostclock"
	"github.com/oduflow/oduflow-go/oduflow/claims"
	"github.com/oduflow/oduflow-go/oduflow/filestore"
	"github.com/oduflow/oduflow-go/receipt"
)

// TestFileStoreDefaultWindows: a file store opened without WithStatusWindows measures
// them with DefaultTimers' LaunchGrace and StatusExpiry. Package filestore cannot import this one, so
// its defaults are its own constants; this holds them equal.
func TestFileStoreDefaultWindows(t *testing.T) {
	ctx := context.Background()
	hc := new(hostclock.Clock)
	fs, err := filestore.Open(claimDir(t), filestorehook.WithClock(hc))
	if err != nil {
		t.Fatal(err)
	}
	clk := newFakeClock()
	c := newClaim(clk, receipt.ProfileConfigure)
	if err := fs.Create(ctx, c); err != nil {
		t.Fatal(err)
	}
	open := func(stamp string, d time.Duration, dispatch bool) bool {
		t.Helper()
		shiftHostClock(t, hc, stamp, d)
		got, lv, err := fs.GetWithLiveness(ctx, c.RequestID)
		if err != nil {
			t.Fatal(err)
		}
		if dispatch {
			return lv.DispatchOpen
		}
		c = got
		return lv.LaunchOpen
	}
	grace, expiry := DefaultTimers().LaunchGrace, DefaultTimers().StatusExpiry
	if !open(c.CreatedClock, grace-time.Second, false) || open(c.CreatedClock, grace+time.Second, false) {
		t.Fatalf("launch window is not DefaultTimers().LaunchGrace (%v)", grace)
	}
	next := c.Clone()
	now := clk.Now()
	next.Phase, next.DispatchedAt = claims.PhaseDispatched, &now
	out, err := fs.CompareAndSwap(ctx, next)
	if err != nil {
		t.Fatal(err)
	}
	if !open(out.DispatchedClock, expiry-time.Second, true) || open(out.DispatchedClock, expiry+time.Second, true) {
		t.Fatalf("dispatch window is not DefaultTimers().StatusExpiry (%v)", expiry)
	}
}
