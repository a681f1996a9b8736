package oduflow

import (
	"context"
	"time"

	"github.com/oduflow/oduflow-go/internal/errmark"
)

// The status windows of a FileClaimStore are measured on this host's monotonic clock: Create stamps the
// claim's CreatedClock, the update that records the dispatch intent its DispatchedClock (boot id and
// CLOCK_BOOTTIME, hostStamp), and a window is open while the host is in the same boot and no more than
// the window's length has passed since its stamp. A claim directory is one host's (its kernel locks are),
// so every reader measures with the writer's clock. A claim written before the stamps existed is measured
// by its wall-clock times against this host's wall clock (written by a process of this host too).

// SetStatusWindows sets the launch grace and status expiry the store's windows last (oduflow.New passes
// its Timers.LaunchGrace and StatusExpiry). Dispatchers sharing one store value must use the same two.
func (s *FileClaimStore) SetStatusWindows(launchGrace, statusExpiry time.Duration) {
	s.windows[0].Store(int64(launchGrace))
	s.windows[1].Store(int64(statusExpiry))
}

func (s *FileClaimStore) window(i int, def time.Duration) time.Duration {
	if d := s.windows[i].Load(); d > 0 {
		return time.Duration(d)
	}
	return def
}

// Liveness reads c's request lock and measures its two windows on this host's monotonic clock.
func (s *FileClaimStore) Liveness(ctx context.Context, c *Claim) (_ Liveness, err error) {
	defer errmark.Boundary(&err)
	held, err := s.RequestLockHeld(ctx, c.RequestID)
	if err != nil {
		return Liveness{}, err
	}
	now, err := s.clock.now()
	if err != nil {
		return Liveness{}, err
	}
	grace, expiry := s.window(0, defaultLaunchGrace), s.window(1, defaultStatusExpiry)
	lv := Liveness{RequestLockHeld: held}
	if c.CreatedClock != "" {
		lv.LaunchOpen = windowOpen(c.CreatedClock, now, grace)
	} else {
		lv.LaunchOpen = time.Since(c.CreatedAt) <= grace
	}
	switch {
	case c.DispatchedAt == nil:
	case c.DispatchedClock != "":
		lv.DispatchOpen = windowOpen(c.DispatchedClock, now, expiry)
	default:
		lv.DispatchOpen = time.Since(*c.DispatchedAt) <= expiry
	}
	return lv, nil
}

// GetWithLiveness reads the claim, then its liveness (Liveness).
func (s *FileClaimStore) GetWithLiveness(ctx context.Context, requestID string) (_ *Claim, _ Liveness, err error) {
	defer errmark.Boundary(&err)
	c, err := s.Get(ctx, requestID)
	if err != nil {
		return nil, Liveness{}, err
	}
	lv, err := s.Liveness(ctx, c)
	if err != nil {
		return nil, Liveness{}, err
	}
	return c, lv, nil
}
