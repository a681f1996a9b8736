package oduflow

import (
	"fmt"
	"time"

	"github.com/cockroachdb/errors"

	"github.com/oduflow/oduflow-go/oduflow/claims"
)

// defaultClaimDir is where claims live unless WithClaimDir says otherwise.
const defaultClaimDir = "/var/cache/salt/oduflow-apply"

// outcomeUnknownError is how a ClaimStore marks a write whose acknowledgement was lost (it may have
// committed): some error in the chain has OutcomeUnknown() reporting true (etcdstore's writes do). The
// behaviour is matched rather than a sentinel so that this package needs no store's import.
type outcomeUnknownError interface{ OutcomeUnknown() bool }

func isOutcomeUnknown(err error) bool {
	var ou outcomeUnknownError
	return errors.As(err, &ou) && ou.OutcomeUnknown()
}

// unreadableClaim is how a ClaimStore names a claim its listing could not read (claims.ClaimStore): the
// file store's errors have the method. Matched by behaviour, as outcomeUnknownError.
type unreadableClaim interface{ UnreadableRequestID() string }

// StatusWindowsError: New was given a claim store that measures the status windows itself
// (claims.WindowedStore) with windows other than the Dispatcher's Timers. The store's windows are fixed
// when it is built (filestore.WithStatusWindows, etcdstore.WithStatusWindows); New never changes a store
// it is given, so it refuses it before anything is written. It matches claims.ErrInvalidInput
// (errors.Is). Build the store with the Timers' LaunchGrace and StatusExpiry, or give New the store's.
type StatusWindowsError struct {
	// StoreLaunchGrace and StoreStatusExpiry are the store's (claims.WindowedStore.StatusWindows).
	StoreLaunchGrace, StoreStatusExpiry time.Duration
	// TimersLaunchGrace and TimersStatusExpiry are the Dispatcher's (WithTimers, else DefaultTimers).
	TimersLaunchGrace, TimersStatusExpiry time.Duration
}

func (e *StatusWindowsError) Error() string {
	return fmt.Sprintf("oduflow: the claim store's status windows (its constructor's: launch grace %s, status expiry %s) "+
		"differ from the dispatcher's Timers (WithTimers: launch grace %s, status expiry %s); nothing written",
		e.StoreLaunchGrace, e.StoreStatusExpiry, e.TimersLaunchGrace, e.TimersStatusExpiry)
}

// Unwrap makes errors.Is(err, claims.ErrInvalidInput) true: a configuration mistake.
func (e *StatusWindowsError) Unwrap() error { return claims.ErrInvalidInput }

// checkStatusWindows refuses a store whose windows are not t's (nil: the store measures none).
func checkStatusWindows(w claims.WindowedStore, t Timers) error {
	if w == nil {
		return nil
	}
	grace, expiry := w.StatusWindows()
	if grace == t.LaunchGrace && expiry == t.StatusExpiry {
		return nil
	}
	return &StatusWindowsError{StoreLaunchGrace: grace, StoreStatusExpiry: expiry,
		TimersLaunchGrace: t.LaunchGrace, TimersStatusExpiry: t.StatusExpiry}
}
