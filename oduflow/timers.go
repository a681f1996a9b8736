package oduflow

import "time"

// The production timers of the status contract (see DefaultTimers).
const (
	defaultExecutionWait = 7200 * time.Second
	defaultHardDeadline  = 7250 * time.Second
	defaultStatusExpiry  = 7260 * time.Second
	defaultLaunchGrace   = 30 * time.Second
	defaultLeaseWait     = 60 * time.Second
	defaultPollBudget    = 250
	defaultCallTimeout   = 30 * time.Second
	defaultBusStall      = 10 * time.Second
	// publishTimeout is the "timeout" field sent with each publication (what LocalClient sends); a wire
	// value, not a timer of the dispatcher.
	publishTimeout = 5
)

// Timers holds every duration the dispatcher uses; it is the one place they are expressed. DefaultTimers
// returns the production values (in parentheses below); WithTimers replaces them (tests, demos).
type Timers struct {
	// ExecutionWait is how long a worker waits for a trustworthy return after dispatch (7200 s).
	ExecutionWait time.Duration
	// HardDeadline is the worker's alarm, reset at dispatch: it never runs longer than this after
	// dispatch (7250 s).
	HardDeadline time.Duration
	// StatusExpiry: more than this after the dispatch timestamp a non-final claim is unknown, even if a
	// worker still holds its lock (7260 s).
	StatusExpiry time.Duration
	// LaunchGrace: a non-final claim whose request lock is free is still running (launching) this long
	// after it was created, and unknown (worker disappeared) afterwards (30 s).
	LaunchGrace time.Duration
	// LeaseWait bounds the wait for the per-client execution lease (60 s).
	LeaseWait time.Duration
	// PollBudget is the number of oduflow_job.status polls spread over ExecutionWait (250).
	PollBudget int
	// CallTimeout bounds one read-only call (test.ping, capabilities, one status poll, one attest) from
	// publish to return (30 s).
	CallTimeout time.Duration
	// BusStall: after a publish the master acknowledged (it fires salt/job/<jid>/new for each), nothing
	// at all arriving on the event bus for this long is a stalled bus: Hooks.BusGap("bus_stalled"), and
	// the waiting workers poll at once (10 s; 0 means the default).
	BusStall time.Duration
	// CapabilityReuse: a worker's preflight reuses a clear oduflow_job.capabilities answer this dispatcher
	// received for the same minion and profile table less than this long ago instead of asking the minion
	// again (one Salt job less per request on the minion). 0 (the default) asks every time. At most once,
	// fencing and proofs are unchanged; what a window trades is the preflight's early refusal of a minion
	// that changed within it (the module then refuses the run itself, nothing run): see the package doc.
	CapabilityReuse time.Duration
	// MasterProof: a readiness ping the master answered proves its request channel for the Starts of
	// this long after it (3 s; 0 means the default): shorter, and a master gone is refused sooner at the
	// cost of one more ping per Start burst (tests set it short rather than wait a proof out). Once two
	// thirds of it have passed, a Start renews the proof with a ping in the background and goes on.
	MasterProof time.Duration
}

// DefaultTimers are the production values.
func DefaultTimers() Timers {
	return Timers{
		ExecutionWait: defaultExecutionWait,
		HardDeadline:  defaultHardDeadline,
		StatusExpiry:  defaultStatusExpiry,
		LaunchGrace:   defaultLaunchGrace,
		LeaseWait:     defaultLeaseWait,
		PollBudget:    defaultPollBudget,
		CallTimeout:   defaultCallTimeout,
		BusStall:      defaultBusStall,
		MasterProof:   masterProofTTL,
	}
}

// busStall is BusStall, or its default when unset.
func (t Timers) busStall() time.Duration {
	if t.BusStall <= 0 {
		return defaultBusStall
	}
	return t.BusStall
}

// PollInterval spreads the poll budget over the execution window (about 28.8 s by default).
func (t Timers) PollInterval() time.Duration {
	if t.PollBudget <= 0 {
		return t.ExecutionWait
	}
	return t.ExecutionWait / time.Duration(t.PollBudget)
}

// clockSource is the time source; tests inject a fake one (withClock).
type clockSource interface {
	Now() time.Time
}

type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now().UTC() }

// systemClockSource is the wall clock (UTC).
func systemClockSource() clockSource { return systemClock{} }
