package oduflow

import "time"

// The timers of the status contract (seed 000 and DESIGN.md section 5).
const (
	// ExecutionWait is how long a worker waits for a trustworthy return after dispatch.
	ExecutionWait = 7200 * time.Second
	// HardDeadline is the worker's alarm, reset at dispatch: it never runs longer than this after dispatch.
	HardDeadline = 7250 * time.Second
	// StatusExpiry: more than this after the dispatch timestamp a non-final claim is unknown, even if a
	// worker still holds its lock.
	StatusExpiry = 7260 * time.Second
	// LaunchGrace: a non-final claim whose request lock is free is still "running" (launching) this long
	// after it was created, and unknown (worker disappeared) afterwards.
	LaunchGrace = 30 * time.Second
	// LeaseWait bounds the wait for the per-client execution lease.
	LeaseWait = 60 * time.Second
	// PollBudget is the number of oduflow_job.status polls spread over ExecutionWait.
	PollBudget = 250
	// CallTimeout bounds one read-only call (test.ping, capabilities, one status poll) from publish to return.
	CallTimeout = 30 * time.Second
	// PublishTimeout is the "timeout" field sent with each publication (what LocalClient sends).
	PublishTimeout = 5
)

// Timers holds every duration the dispatcher uses. DefaultTimers returns the named constants; tests
// shorten them through WithTimers.
type Timers struct {
	ExecutionWait time.Duration
	HardDeadline  time.Duration
	StatusExpiry  time.Duration
	LaunchGrace   time.Duration
	LeaseWait     time.Duration
	PollBudget    int
	CallTimeout   time.Duration
}

// DefaultTimers are the production values.
func DefaultTimers() Timers {
	return Timers{
		ExecutionWait: ExecutionWait,
		HardDeadline:  HardDeadline,
		StatusExpiry:  StatusExpiry,
		LaunchGrace:   LaunchGrace,
		LeaseWait:     LeaseWait,
		PollBudget:    PollBudget,
		CallTimeout:   CallTimeout,
	}
}

// PollInterval spreads the poll budget over the execution window (about 28.8 s by default).
func (t Timers) PollInterval() time.Duration {
	if t.PollBudget <= 0 {
		return t.ExecutionWait
	}
	return t.ExecutionWait / time.Duration(t.PollBudget)
}

// Clock is the time source; tests inject a fake one.
type Clock interface {
	Now() time.Time
}

type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now().UTC() }

// SystemClock is the wall clock (UTC).
func SystemClock() Clock { return systemClock{} }
