package oduflow

import (
	"context"
	"log/slog"
	"os"

	"github.com/oduflow/oduflow-go/salt"
)

// Option configures a Dispatcher.
type Option func(*config)

type config struct {
	claimDir   string
	store      ClaimStore
	leases     Leases
	clock      Clock
	logger     *slog.Logger
	hooks      Hooks
	mode       WorkerMode
	timers     Timers
	jids       *salt.JIDGenerator
	stepHook   func(step string)
	publishing PublicationSource
	maxPublish int
	workerLog  string
	// workerLogFile is an already open log for detached workers (DetachedLogFile).
	workerLogFile *os.File
	pkiDir        string
}

// WorkerMode says where workers run.
type WorkerMode struct {
	detached bool
	exe      string
	env      []string
}

// InProcess runs each worker as a goroutine of the Dispatcher's process (the default).
func InProcess() WorkerMode { return WorkerMode{} }

// Detached runs each worker as a separate process: exe (normally the embedding binary itself, see
// os.Executable) is started with exactly two arguments, the minion id and the request id, and the
// environment variable WorkerEnv set; its main must call MaybeRunWorker first. env adds variables for the
// child (KEY=VALUE). The worker survives the process that started it.
func Detached(exe string, env ...string) WorkerMode {
	return WorkerMode{detached: true, exe: exe, env: env}
}

// WithClaimDir sets the claim directory (default DefaultClaimDir); it is created 0700 when missing and
// refused when its owner or mode is wrong.
func WithClaimDir(dir string) Option { return func(c *config) { c.claimDir = dir } }

// WithMaxConcurrentPublishes bounds the publish requests this Dispatcher has in flight at once (default
// DefaultMaxConcurrentPublishes); further publishes wait (before sending anything) for a slot.
func WithMaxConcurrentPublishes(n int) Option { return func(c *config) { c.maxPublish = n } }

// DefaultMaxConcurrentPublishes is the default bound of publish requests in flight.
const DefaultMaxConcurrentPublishes = 32

// WithClaimStore replaces the file claim store (its Leases too when it implements them, else pass
// WithLeases).
func WithClaimStore(s ClaimStore) Option { return func(c *config) { c.store = s } }

// WithLeases sets the lease implementation (default: the FileClaimStore's flock leases).
func WithLeases(l Leases) Option { return func(c *config) { c.leases = l } }

// WithClock injects the time source (tests).
func WithClock(clk Clock) Option { return func(c *config) { c.clock = clk } }

// WithLogger sets the structured logger (default: slog.Default()).
func WithLogger(l *slog.Logger) Option { return func(c *config) { c.logger = l } }

// WithMetrics sets the metrics hooks (default NopHooks).
func WithMetrics(h Hooks) Option { return func(c *config) { c.hooks = h } }

// WithWorkerMode selects in-process (default) or detached workers.
func WithWorkerMode(m WorkerMode) Option { return func(c *config) { c.mode = m } }

// WithTimers overrides the timers (tests; production uses DefaultTimers).
func WithTimers(t Timers) Option { return func(c *config) { c.timers = t } }

// WithJIDGenerator sets the JID source (default salt.NewJIDGenerator()).
func WithJIDGenerator(g *salt.JIDGenerator) Option { return func(c *config) { c.jids = g } }

// WithStepHook calls fn at each worker step (tests: pause or announce steps to kill a worker at each).
// Steps: StepClaimed, StepLease, StepDispatchRecorded, StepPublishSending, StepPublishReplied,
// StepReturned, StepCommitted.
func WithStepHook(fn func(step string)) Option { return func(c *config) { c.stepHook = fn } }

// WithPublicationSource sets how a claim's publish arguments are obtained (custom executions add theirs).
func WithPublicationSource(p PublicationSource) Option { return func(c *config) { c.publishing = p } }

// Worker steps reported to the step hook.
const (
	StepClaimed          = "claimed"           // request lock held, claim read
	StepLease            = "lease"             // client lease held, preflight passed
	StepDispatchRecorded = "dispatch_recorded" // phase dispatching durable, nothing sent yet
	StepPublishSending   = "publish_sending"   // about to send the one publish
	StepPublishReplied   = "publish_replied"   // publish reply received, dispatched recorded
	StepReturned         = "returned"          // trustworthy terminal receipt in hand, not yet committed
	StepCommitted        = "committed"         // final result committed, leases still held
)

// PublicationSpec is what the worker publishes for one claim: the positional arguments of
// oduflow_job.run after request_id and profile (state_data_json).
type PublicationSpec struct {
	StateDataJSON string
}

// PublicationSource resolves a claim's publication spec. The default serves the fixed profiles (empty
// state data: the role is fixed on the minion by the profile) and refuses custom claims.
type PublicationSource interface {
	Publication(ctx context.Context, c *Claim) (PublicationSpec, error)
}
