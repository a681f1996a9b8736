package filestore

import (
	"context"
	"time"

	"github.com/oduflow/oduflow-go/internal/errmark"
	"github.com/oduflow/oduflow-go/internal/hostclock"
	"github.com/oduflow/oduflow-go/oduflow/claims"
)

// The status windows of a Store are measured on this host's monotonic clock: Create stamps the
// claim's CreatedClock, the update that records the dispatch intent its DispatchedClock (boot id and
// CLOCK_BOOTTIME, internal/hostclock), and a window is open while the host is in the same boot and no
// more than the window's length has passed since its stamp. A claim directory is one host's (its kernel locks are),
// so every reader measures with the writer's clock. A claim written before the stamps existed is measured
// by its wall-clock times against this host's wall clock (written by a process of this host too).

// The production windows, unless WithStatusWindows says otherwise (oduflow.DefaultTimers: a test of
// package oduflow holds the two equal).
const (
	defaultLaunchGrace  = 30 * time.Second
	defaultStatusExpiry = 7260 * time.Second
)

// StatusWindows are the launch grace and status expiry the store's windows last, fixed at Open
// (WithStatusWindows; claims.WindowedStore): oduflow.New compares them with its Timers.
func (s *Store) StatusWindows() (launchGrace, statusExpiry time.Duration) { return s.grace, s.expiry }

// claims.Liveness reads c's request lock and measures its two windows on this host's monotonic clock.
func (s *Store) Liveness(ctx context.Context, c *claims.Claim) (_ claims.Liveness, err error) {
	defer errmark.Boundary(&err)
	held, err := s.RequestLockHeld(ctx, c.RequestID)
	if err != nil {
		return claims.Liveness{}, err
	}
	now, err := s.clock.Now()
	if err != nil {
		return claims.Liveness{}, err
	}
	grace, expiry := s.grace, s.expiry
	lv := claims.Liveness{RequestLockHeld: held}
	if c.CreatedClock != "" {
		lv.LaunchOpen = hostclock.WindowOpen(c.CreatedClock, now, grace)
	} else {
		lv.LaunchOpen = time.Since(c.CreatedAt) <= grace
	}
	switch {
	case c.DispatchedAt == nil:
	case c.DispatchedClock != "":
		lv.DispatchOpen = hostclock.WindowOpen(c.DispatchedClock, now, expiry)
	default:
		lv.DispatchOpen = time.Since(*c.DispatchedAt) <= expiry
	}
	return lv, nil
}

// GetWithLiveness reads the claim, then its liveness (claims.Liveness).
func (s *Store) GetWithLiveness(ctx context.Context, requestID string) (_ *claims.Claim, _ claims.Liveness, err error) {
	defer errmark.Boundary(&err)
	c, err := s.Get(ctx, requestID)
	if err != nil {
		return nil, claims.Liveness{}, err
	}
	lv, err := s.Liveness(ctx, c)
	if err != nil {
		return nil, claims.Liveness{}, err
	}
	return c, lv, nil
}
