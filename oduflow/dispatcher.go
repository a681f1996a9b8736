package oduflow

import (
	"context"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"

	"github.com/cockroachdb/errors"

	"github.com/oduflow/oduflow-go/internal/errmark"
	"github.com/oduflow/oduflow-go/oduflow/claims"
	"github.com/oduflow/oduflow-go/oduflow/filestore"
	"github.com/oduflow/oduflow-go/profiles"
	"github.com/oduflow/oduflow-go/receipt"
	"github.com/oduflow/oduflow-go/salt"
)

// Dispatcher is the at-most-once dispatcher. It is safe for concurrent use; several Dispatchers (in one or
// many processes) may share one claim directory.
type Dispatcher struct {
	pub    Publisher
	hub    *hub
	store  claims.ClaimStore
	leases claims.Leases
	clock  clockSource
	log    *slog.Logger
	hooks  hookSet
	mode   workerMode
	timers Timers
	jids   *salt.JIDGenerator
	step   func(string)
	pubsrc publicationSource
	pubSem chan struct{}
	admit  *admitter  // in-process workers between their request lock and their run publish (admission.go)
	caps   capBatcher // capability checks sharing publications (capbatch.go)
	// capCache: clear capability answers reused within Timers.CapabilityReuse (capcache.go).
	capCache capCache
	// workerLog is where detached workers' stdout/stderr go ("" = /dev/null).
	workerLog     string
	workerLogFile *os.File
	// ownLog: workerLogFile was opened by New (WithWorkerLog); Close closes it.
	ownLog   bool
	closeLog sync.Once
	// pkiDir is the Salt master's pki_dir: <pkiDir>/minions/<id> are the accepted minion keys.
	pkiDir string
	// table is the profile table (WithProfiles; the seeds' by default).
	table *profiles.Table
	// unverifiedSeen holds the requests whose first unverified event was logged (during their wait).
	unverifiedSeen sync.Map
	// refusals: request id -> the refusal code of a run its minion refused and then fenced (wait.go), for
	// the worker's commit.
	refusals sync.Map

	// masterProvedAt: when the master last answered the readiness ping (unix ns; 0 never), and the lock
	// concurrent Starts share one ping under (start.go).
	masterProvedAt atomic.Int64
	masterPingMu   sync.Mutex
	// masterRefreshing: a background ping renewing the proof is in flight (refreshMasterProof).
	masterRefreshing atomic.Bool

	// claimLock is the store when it reads a claim with its lock state at once (nil: Get, then RequestLockHeld).
	claimLock claims.ClaimLockReader
	// windows is the store when it measures the status windows itself (nil: this
	// dispatcher's clock measures them against the claims' timestamps).
	windows claims.WindowedStore

	ctx    context.Context // workers run under it; Close cancels it
	cancel context.CancelFunc
	wg     sync.WaitGroup

	// gate orders admission against Close: what writes a claim or launches a worker runs under its read
	// side (admit) and refuses once closing is set (under its write side).
	gate     sync.RWMutex
	closing  bool
	draining chan struct{} // closed when Close begins
	adoption adoptionConfig
	adoptSem chan struct{} // one token per adoption in flight (WithMaxAdoptions)
	adoptNow chan struct{} // wakes the adoption loop (kickAdoption)

	// watchers are the Watch calls waiting (watch.go); feedOnce starts the store's change feed for them.
	// feedWG counts the goroutines Close waits for after it cancelled ctx: the change feed, and a
	// readiness ping renewing the master's proof (refreshMasterProof).
	watchers watchers
	feedOnce sync.Once
	feedWG   sync.WaitGroup
}

// New builds a Dispatcher. client publishes (a *salt.Client), events reads the master event bus
// (SaltEvents(addr) for a real master). The claim directory is opened (created 0700 when missing) now.
func New(client Publisher, events EventSource, opts ...Option) (_ *Dispatcher, err error) {
	defer errmark.Boundary(&err)
	cfg := config{claimDir: defaultClaimDir, pkiDir: defaultPKIDir, clock: systemClockSource(), timers: DefaultTimers()}
	for _, o := range opts {
		o(&cfg)
	}
	var ownLog bool
	if client == nil || events == nil {
		return nil, errmark.Mark(errors.New("oduflow: nil client or event source"), claims.ErrInvalidInput)
	}
	if cfg.logger == nil {
		cfg.logger = slog.Default()
	}
	if cfg.jids == nil {
		cfg.jids = salt.NewJIDGenerator()
	}
	if cfg.maxPublish <= 0 {
		cfg.maxPublish = defaultMaxConcurrentPublishes
	}
	if cfg.publishing == nil {
		cfg.publishing = fixedPublications{}
	}
	if cfg.store == nil {
		opts := append([]filestore.Option{filestore.WithStatusWindows(cfg.timers.LaunchGrace, cfg.timers.StatusExpiry)}, cfg.fileOpts...)
		fs, err := filestore.Open(cfg.claimDir, opts...)
		if err != nil {
			return nil, err
		}
		cfg.store = fs
	}
	if cfg.profiles == nil {
		cfg.profiles = profiles.DefaultTable()
	}
	claimLock, _ := cfg.store.(claims.ClaimLockReader)
	windows, _ := cfg.store.(claims.WindowedStore)
	if err := checkStatusWindows(windows, cfg.timers); err != nil {
		return nil, err
	}
	if cfg.workerLogOpen != "" && cfg.workerLogFile == nil {
		f, err := openWorkerLogChecked(cfg.workerLogOpen)
		if err != nil {
			return nil, errmark.Mark(err, claims.ErrInvalidInput)
		}
		cfg.workerLogFile, ownLog = f, true
	}
	ctx, cancel := context.WithCancel(context.Background())
	d := &Dispatcher{pub: client, store: cfg.store, leases: cfg.store, claimLock: claimLock, windows: windows, clock: cfg.clock, log: cfg.logger,
		hooks: hookSet{cfg.hooks}, mode: cfg.mode, timers: cfg.timers, jids: cfg.jids, step: cfg.stepHook,
		pubsrc: cfg.publishing, pubSem: make(chan struct{}, cfg.maxPublish),
		admit: newAdmitter(admitPerPublish * cfg.maxPublish), workerLog: cfg.workerLog, workerLogFile: cfg.workerLogFile, ownLog: ownLog,
		pkiDir: cfg.pkiDir, table: cfg.profiles,
		ctx: ctx, cancel: cancel, draining: make(chan struct{}), adoption: cfg.adoption,
		adoptNow: make(chan struct{}, 1)}
	d.hub = newHub(events, func(msg string, args ...any) { d.log.Warn(msg, args...) })
	d.startAdoption()
	d.hub.onGap = func(reason string) { d.hooks.busGap(d.ctx, reason) }
	return d, nil
}

// Wait blocks until every in-process worker started by this Dispatcher has finished, or ctx ends.
func (d *Dispatcher) Wait(ctx context.Context) (err error) {
	defer errmark.Boundary(&err)
	done := make(chan struct{})
	go func() { d.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Lookup is the operator's read of a request's claim without knowing its profile: a copy of the claim as
// last committed (identities, profile, phase, recorded status, counts, error code, evidence). It never
// changes anything; its Status field is the recorded one, not the status rules' answer (use Status with
// c.EffectiveProfile() for that). No claim: ErrNoClaim. A claim bound to another minion: ErrMismatch.
func (d *Dispatcher) Lookup(ctx context.Context, minion, request string) (_ *claims.Claim, err error) {
	defer errmark.Boundary(&err)
	t, err := d.parseTarget(minion, request)
	if err != nil {
		return nil, err
	}
	c, err := d.store.Get(ctx, t.request)
	if err != nil {
		return nil, err
	}
	if err := checkBinding(c, "", t.minion); err != nil {
		return nil, err
	}
	return c.Clone(), nil
}

// target names a request the way every call does: the minion it runs on and its request id. It is
// parsed once, at the API boundary (parseTarget: both ids canonical, else ErrInvalidInput before any
// I/O), and passed inward as is: a function that holds a target never validates the ids again. Only
// parseTarget and targetOf build one.
type target struct {
	minion  string
	request string
}

// parseTarget validates the ids a caller passed: the one place the dispatcher parses them. The minion
// id follows the profile table's id policy.
func (d *Dispatcher) parseTarget(minion, request string) (target, error) {
	if err := d.table.ValidateMinionID(minion); err != nil {
		return target{}, invalid(err, "minion id")
	}
	if err := receipt.ValidateRequestID(request); err != nil {
		return target{}, invalid(err, "request id")
	}
	return target{minion: minion, request: request}, nil
}

// targetOf is the target of a claim the claim store read or wrote (Claim.Validate checked its ids).
func targetOf(c *claims.Claim) target { return target{minion: c.MinionID, request: c.RequestID} }

// validateProfile accepts custom and the profiles of the table; anything else matches
// receipt.ErrUnknownProfile.
func (d *Dispatcher) validateProfile(p receipt.Profile) error {
	if p != receipt.ProfileCustom && !d.table.Has(p) {
		return invalid(errors.WithStack(receipt.ErrUnknownProfile), "profile")
	}
	return nil
}

// checkBinding refuses a claim read through another profile or minion.
func checkBinding(c *claims.Claim, profile receipt.Profile, minion string) error {
	if c.MinionID != minion {
		return &mismatchError{Field: "minion_id", Bound: c.MinionID}
	}
	if profile != "" && c.EffectiveProfile() != profile {
		return &mismatchError{Field: "profile", Bound: string(c.EffectiveProfile())}
	}
	return nil
}

func (d *Dispatcher) claimLog(c *claims.Claim) *slog.Logger {
	return d.log.With(slog.String("request_id", c.RequestID), slog.String("minion_id", c.MinionID),
		slog.String("jid", c.JID), slog.String("profile", string(c.EffectiveProfile())))
}
