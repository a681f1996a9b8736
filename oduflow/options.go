package oduflow

import (
	"log/slog"
	"os"
	"time"

	"github.com/oduflow/oduflow-go/oduflow/catalog"
	"github.com/oduflow/oduflow-go/oduflow/claims"
	"github.com/oduflow/oduflow-go/oduflow/filestore"
	"github.com/oduflow/oduflow-go/profiles"
	"github.com/oduflow/oduflow-go/salt"
)

// Option configures a Dispatcher.
type Option func(*config)

type config struct {
	claimDir   string
	store      claims.Store
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
	// profiles is the profile table (WithProfiles); nil: profiles.DefaultTable().
	profiles *profiles.Table
	adoption adoptionConfig
	// fileOpts are the test hooks of the default file store New opens (withClock: the fake clock's host
	// clock, filestorehook.WithClock); none in production. New adds the windows of its Timers.
	fileOpts []filestore.Option
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

// WithProfiles sets the profile table (profiles.LoadTable): which profiles Start accepts, which minion
// ids (its minion_ids policy) and the table digest every minion must report in oduflow_job.capabilities
// (else the worker fails the request profile_table_mismatch, nothing published). Without it, or with nil,
// the seeds' table (profiles.DefaultTable): the four fixed profiles on client-<uuid> minions, byte for
// byte protocol 1 as before tables.
func WithProfiles(t *profiles.Table) Option { return func(c *config) { c.profiles = t } }

// WithClaimDir sets the claim directory (default /var/cache/salt/oduflow-apply); it is created 0700 when missing and
// refused when its owner or mode is wrong.
func WithClaimDir(dir string) Option { return func(c *config) { c.claimDir = dir } }

// defaultMaxConcurrentPublishes is the default bound of publish requests in flight.
const defaultMaxConcurrentPublishes = 32

// WithClaimStore replaces the file claim store with s: its claims and its leases (Store), and whichever
// optional capabilities it implements (see Store).
func WithClaimStore(s claims.Store) Option { return func(c *config) { c.store = s } }

// WithLogger sets the structured logger (default: slog.Default()).
func WithLogger(l *slog.Logger) Option { return func(c *config) { c.logger = l } }

// WithHooks sets the metrics hooks (default: none).
func WithHooks(h Hooks) Option { return func(c *config) { c.hooks = h } }

// WithClock sets the wall clock the dispatcher reads for the times it records in claims (created,
// dispatched, finished, resumed: records for people and audits; default time.Now in UTC). No status rule
// compares such a time with another host's clock: the launch and dispatch windows are measured by the
// claim store (see docs/ARCHITECTURE.md, Status rules and timers), so a replica whose clock is minutes off
// reports the same statuses (tests inject a skewed clock here).
func WithClock(now func() time.Time) Option {
	return func(c *config) { c.clock = funcClock(now) }
}

// funcClock adapts a func to clockSource.
type funcClock func() time.Time

func (f funcClock) Now() time.Time { return f().UTC() }

// WithTimers replaces the timers (default DefaultTimers(); tests and demos shorten them).
func WithTimers(t Timers) Option { return func(c *config) { c.timers = t } }

// withPublicationSource sets how a claim's publish arguments are obtained (custom executions add theirs).
func withPublicationSource(p publicationSource) Option { return func(c *config) { c.publishing = p } }

// WithPKIDir sets the Salt master's pki_dir (default /etc/salt/pki/master). The dispatcher reads the key
// the master accepted for a minion from <dir>/minions/<id> (never through a wheel call) to verify
// receipt proofs; the key's fingerprint is pinned in the claim at preflight.
func WithPKIDir(dir string) Option { return func(c *config) { c.pkiDir = dir } }

// WithWorkerLog sends the stdout and stderr of detached workers to the file path (appended; created
// 0600). New opens it, so a bad log path is a configuration error reported before any claim is written;
// Close closes it. The file and its directory follow the claim store's safe-file rules: the directory is
// owned by this process's user with mode 0700 and no symlink in any path component
// (filepath.Join(claimDir, "worker.log") qualifies); the file must be a regular, singly linked file owned
// by this user without group/other permission bits (a FIFO, a device or a symlink is refused before it is
// opened, so the open never blocks). Without this option a detached worker's output goes to /dev/null: it
// never inherits the launcher's stdout or stderr, so a pipeline such as `tool start ... 2>&1 | tee log`
// ends when the tool exits.
func WithWorkerLog(path string) Option { return func(c *config) { c.workerLogOpen = path } }

// WithCustomCatalog enables custom executions (CustomStart, CustomStatus): store holds the definitions,
// assignments and frozen execution snapshots, and the worker publishes a custom claim's frozen payload
// from it. It installs the dispatcher's publication source; fixed profiles are served as before. (Do not
// combine it with withPublicationSource: the later option wins.)
func WithCustomCatalog(store catalog.Store) Option {
	return withPublicationSource(&customPublications{store: store})
}
