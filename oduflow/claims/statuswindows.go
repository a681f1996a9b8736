package claims

import (
	"context"
	"time"
)

// Liveness is what a claim store that measures the status windows itself (the file store, etcdstore)
// reads about one claim at one instant. The status rules need nothing else: no replica compares its
// own wall clock with a time another replica wrote.
type Liveness struct {
	// RequestLockHeld: a worker holds the request lock (what Status calls running).
	RequestLockHeld bool
	// LaunchOpen: the launch window, Timers.LaunchGrace from the claim's creation, has not run out.
	LaunchOpen bool
	// DispatchOpen: the dispatch window, Timers.StatusExpiry from the recorded dispatch intent, has not
	// run out (false for a claim without an intent).
	DispatchOpen bool
}

// WindowedStore is the optional capability of a Store that measures the status rules' two windows itself,
// with what it expires (etcdstore: a launching key and a dispatch-window key, each on an etcd lease of
// the window's TTL, so the cluster expires them) or with one host's monotonic clock (the file store:
// CLOCK_BOOTTIME and the boot id, stamped into the claim by the store at creation and at the intent).
// The store is given the two windows' lengths when it is built (filestore.WithStatusWindows,
// etcdstore.WithStatusWindows) and never changes them; StatusWindows reports them, and oduflow.New
// refuses a store whose windows are not its Timers.LaunchGrace and StatusExpiry (a
// *oduflow.StatusWindowsError, before anything is written), so every dispatcher on one store uses the
// same two. Liveness reads the windows and the request lock of a claim already read; GetWithLiveness
// reads the claim with them at one instant.
type WindowedStore interface {
	StatusWindows() (launchGrace, statusExpiry time.Duration)
	Liveness(ctx context.Context, c *Claim) (Liveness, error)
	GetWithLiveness(ctx context.Context, requestID string) (*Claim, Liveness, error)
}
