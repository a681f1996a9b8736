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
	clock      clockSource
	logger     *slog.Logger
	hooks      Hooks
	mode       workerMode
	timers     Timers
	jids       *salt.JIDGenerator
	stepHook   func(step string)
	publishing publicationSource
	maxPublish int
	workerLog  string
	// workerLogOpen is the worker log New opens (WithWorkerLog).
	workerLogOpen string
	// workerLogFile is an already open log for detached workers (withWorkerLogFile).
	workerLogFile *os.File
	pkiDir        string
}

// workerMode says where workers run: in-process goroutines (the zero value) or detached processes.
type workerMode struct {
	detached bool
	exe      string
	env      []string
}

// WithDetachedWorkers runs each worker as a separate process instead of a goroutine of the Dispatcher's
// process (the default): exe (normally the embedding binary itself, see os.Executable) is started with
// exactly two arguments, the minion id and the request id, and the environment variable
// ODUFLOW_DETACHED_WORKER=1; its main must call RunWorkerIfRequested first. env adds variables for the
// child (KEY=VALUE). The worker survives the process that started it.
func WithDetachedWorkers(exe string, env ...string) Option {
	return func(c *config) { c.mode = workerMode{detached: true, exe: exe, env: env} }
}

// WithClaimDir sets the claim directory (default /var/cache/salt/oduflow-apply); it is created 0700 when missing and
// refused when its owner or mode is wrong.
func WithClaimDir(dir string) Option { return func(c *config) { c.claimDir = dir } }

// defaultMaxConcurrentPublishes is the default bound of publish requests in flight.
const defaultMaxConcurrentPublishes = 32

// WithClaimStore replaces the file claim store. The store must also implement Leases (as FileClaimStore
// and etcdstore do): New refuses one that does not (ErrInvalidInput).
func WithClaimStore(s ClaimStore) Option { return func(c *config) { c.store = s } }

// WithLogger sets the structured logger (default: slog.Default()).
func WithLogger(l *slog.Logger) Option { return func(c *config) { c.logger = l } }

// WithHooks sets the metrics hooks (default: none).
func WithHooks(h Hooks) Option { return func(c *config) { c.hooks = h } }

// WithTimers replaces the timers (default DefaultTimers(); tests and demos shorten them).
func WithTimers(t Timers) Option { return func(c *config) { c.timers = t } }

// withPublicationSource sets how a claim's publish arguments are obtained (custom executions add theirs).
func withPublicationSource(p publicationSource) Option { return func(c *config) { c.publishing = p } }

// Worker steps reported to the step hook (tests).
const (
	stepClaimed          = "claimed"           // request lock held, claim read
	stepLease            = "lease"             // client lease held, preflight passed
	stepDispatchRecorded = "dispatch_recorded" // phase dispatching durable, nothing sent yet
	stepPublishSending   = "publish_sending"   // about to send the one publish
	stepPublishReplied   = "publish_replied"   // publish reply received, dispatched recorded
	stepReturned         = "returned"          // trustworthy terminal receipt in hand, not yet committed
	stepCommitted        = "committed"         // final result committed, leases still held
)

// publicationSpec is what the worker publishes for one claim: the positional arguments of
// oduflow_job.run after request_id and profile (state_data_json).
type publicationSpec struct {
	StateDataJSON string
}

// publicationSource resolves a claim's publication spec. The default serves the fixed profiles (empty
// state data: the role is fixed on the minion by the profile) and refuses custom claims.
type publicationSource interface {
	Publication(ctx context.Context, c *Claim) (publicationSpec, error)
}
