package oduflow

import (
	"context"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/oduflow/oduflow-go/internal/errmark"

	"github.com/cockroachdb/errors"

	"github.com/oduflow/oduflow-go/profiles"
	"github.com/oduflow/oduflow-go/receipt"
	"github.com/oduflow/oduflow-go/salt"
)

// Dispatcher is the at-most-once dispatcher. It is safe for concurrent use; several Dispatchers (in one or
// many processes) may share one claim directory.
type Dispatcher struct {
	pub    Publisher
	hub    *hub
	store  ClaimStore
	leases Leases
	clock  clockSource
	log    *slog.Logger
	hooks  hookSet
	mode   workerMode
	timers Timers
	jids   *salt.JIDGenerator
	step   func(string)
	pubsrc publicationSource
	pubSem chan struct{}
	admit  *admitter // in-process workers between their request lock and their run publish (worker.go)
	// workerLog is where detached workers' stdout/stderr go ("" = /dev/null).
	workerLog     string
	workerLogFile *os.File
	// ownLog: workerLogFile was opened by New (WithWorkerLog); Close closes it.
	ownLog   bool
	closeLog sync.Once
	// pkiDir is the Salt master's pki_dir: <pkiDir>/minions/<id> are the accepted minion keys.
	pkiDir string
	// unverifiedSeen holds the requests whose first unverified event was logged (during their wait).
	unverifiedSeen sync.Map

	// claimLock is the store when it is also the Leases and reads a claim with its lock state at once.
	claimLock claimLockReader

	ctx    context.Context // workers run under it; Close cancels it
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// New builds a Dispatcher. client publishes (a *salt.Client), events reads the master event bus
// (SaltEvents(addr) for a real master). The claim directory is opened (created 0700 when missing) now.
func New(client Publisher, events EventSource, opts ...Option) (*Dispatcher, error) {
	cfg := config{claimDir: defaultClaimDir, pkiDir: defaultPKIDir, clock: systemClockSource(), timers: DefaultTimers()}
	for _, o := range opts {
		o(&cfg)
	}
	var ownLog bool
	if client == nil || events == nil {
		return nil, errmark.Mark(errors.New("oduflow: nil client or event source"), ErrInvalidInput)
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
		fs, err := OpenFileClaimStore(cfg.claimDir)
		if err != nil {
			return nil, err
		}
		cfg.store = fs
	}
	var claimLock claimLockReader
	if cfg.leases == nil {
		l, ok := cfg.store.(Leases)
		if !ok {
			return nil, errmark.Mark(errors.New("oduflow: the claim store does not implement Leases"), ErrInvalidInput)
		}
		cfg.leases = l
		claimLock, _ = cfg.store.(claimLockReader)
	}
	if cfg.workerLogOpen != "" && cfg.workerLogFile == nil {
		f, err := openWorkerLogChecked(cfg.workerLogOpen)
		if err != nil {
			return nil, errmark.Mark(err, ErrInvalidInput)
		}
		cfg.workerLogFile, ownLog = f, true
	}
	ctx, cancel := context.WithCancel(context.Background())
	d := &Dispatcher{pub: client, store: cfg.store, leases: cfg.leases, claimLock: claimLock, clock: cfg.clock, log: cfg.logger,
		hooks: hookSet{cfg.hooks}, mode: cfg.mode, timers: cfg.timers, jids: cfg.jids, step: cfg.stepHook,
		pubsrc: cfg.publishing, pubSem: make(chan struct{}, cfg.maxPublish),
		admit: newAdmitter(admitPerPublish * cfg.maxPublish), workerLog: cfg.workerLog, workerLogFile: cfg.workerLogFile, ownLog: ownLog,
		pkiDir: cfg.pkiDir,
		ctx:    ctx, cancel: cancel}
	d.hub = newHub(events, func(msg string, args ...any) { d.log.Warn(msg, args...) })
	return d, nil
}

// Close stops in-process workers (their claims stay as they are: Status reports them by the rules, a
// dispatched one becomes unknown) and closes the shared event subscription. Detached workers go on.
func (d *Dispatcher) Close() error {
	d.cancel()
	d.wg.Wait()
	d.hub.close()
	var err error
	if d.ownLog {
		d.closeLog.Do(func() { err = d.workerLogFile.Close() })
	}
	return err
}

// Wait blocks until every in-process worker started by this Dispatcher has finished, or ctx ends.
func (d *Dispatcher) Wait(ctx context.Context) error {
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
func (d *Dispatcher) Lookup(ctx context.Context, minion, request string) (*Claim, error) {
	if err := validateIDs(minion, request); err != nil {
		return nil, err
	}
	c, err := d.store.Get(ctx, request)
	if err != nil {
		return nil, err
	}
	if err := checkBinding(c, "", minion); err != nil {
		return nil, err
	}
	return c.clone(), nil
}

func validateIDs(minion, request string) error {
	if err := receipt.ValidateMinionID(minion); err != nil {
		return invalid(err, "minion id")
	}
	if err := receipt.ValidateRequestID(request); err != nil {
		return invalid(err, "request id")
	}
	return nil
}

func validateProfile(p receipt.Profile) error {
	if _, err := receipt.ParseProfile(string(p)); err != nil {
		return invalid(err, "profile")
	}
	return nil
}

// checkBinding refuses a claim read through another profile or minion.
func checkBinding(c *Claim, profile receipt.Profile, minion string) error {
	if c.MinionID != minion {
		return &mismatchError{Field: "minion_id", Bound: c.MinionID}
	}
	if profile != "" && c.EffectiveProfile() != profile {
		return &mismatchError{Field: "profile", Bound: string(c.EffectiveProfile())}
	}
	return nil
}

func (d *Dispatcher) claimLog(c *Claim) *slog.Logger {
	return d.log.With(slog.String("request_id", c.RequestID), slog.String("minion_id", c.MinionID),
		slog.String("jid", c.JID), slog.String("profile", string(c.EffectiveProfile())))
}

// Start claims the request for profile on minion and launches its worker; a repeated Start returns the
// current status and never publishes again (even while the event bus or the master is down). The custom
// profile needs a custom execution (not Start).
//
// Before it writes a new claim, Start checks that it can dispatch, from state it already holds: its
// credentials load (the key file reads; an eauth token is cached, or obtained once with mk_token) and its
// event-bus subscription is live. Nothing is published for the check. When it fails, nothing is written
// and the error matches ErrNotReady and its cause (the event bus or the master unreachable, salt.ErrKeyFile,
// salt.ErrAuthentication, salt.ErrAuthorization); the same request id can be started once fixed. A claim
// store that cannot be read gives ErrClaimStore (or ErrCorruptClaim for a damaged claim).
func (d *Dispatcher) Start(ctx context.Context, minion, request string, profile Profile) (Response, error) {
	t0 := time.Now()
	defer func() { d.hooks.observe("start", time.Since(t0)) }()
	if err := validateIDs(minion, request); err != nil {
		return Response{}, err
	}
	if err := validateProfile(profile); err != nil {
		return Response{}, err
	}
	role, err := profiles.RoleFor(profile)
	if err != nil {
		return Response{}, invalid(err, "profile")
	}
	if c, err := d.store.Get(ctx, request); err == nil {
		return d.existing(ctx, c, profile, minion) // even when the bus or the master is down
	} else if !errors.Is(err, ErrNoClaim) {
		return Response{}, claimStoreErr(err)
	}
	// No claim yet: prove, from state already held, that this dispatcher can dispatch before writing one,
	// so that a configuration error burns nothing (ErrNotReady).
	if err := d.ready(ctx); err != nil {
		return Response{}, err
	}
	c := &Claim{Protocol: claimProtocol, MinionID: minion, RequestID: request, Profile: profile,
		Role: string(role), JID: string(d.jids.Next()), Phase: PhaseClaimed, CreatedAt: d.clock.Now()}
	return d.create(ctx, c)
}

// create persists a new claim, then launches its worker. When a detached worker cannot be started, the
// claim (still in phase claimed: nothing was published) is committed terminal failed with
// worker_launch_failed, and the response comes with an error matching ErrWorkerLaunch.
func (d *Dispatcher) create(ctx context.Context, c *Claim) (Response, error) {
	if err := d.store.Create(ctx, c); err != nil {
		if errors.Is(err, ErrClaimExists) {
			cur, gerr := d.store.Get(ctx, c.RequestID)
			if gerr != nil {
				return Response{}, gerr
			}
			return d.existing(ctx, cur, c.Profile, c.MinionID)
		}
		return Response{}, err
	}
	d.hooks.started(c.Profile, true)
	lg := d.claimLog(c)
	lg.Info("claim created", slog.String("role", c.Role))
	if err := d.launch(c); err != nil {
		lg.Error("worker launch failed; nothing published", slog.String("error", err.Error()))
		out := d.failLaunch(ctx, c)
		r, rerr := d.respond(ctx, out)
		if rerr != nil {
			r = responseFor(out, receipt.StatusUnknown)
		}
		return r, &workerLaunchError{RequestID: c.RequestID, Cause: err}
	}
	return responseFor(c, receipt.StatusRunning), nil
}

func (d *Dispatcher) existing(ctx context.Context, c *Claim, profile receipt.Profile, minion string) (Response, error) {
	if err := checkBinding(c, profile, minion); err != nil {
		return Response{}, err
	}
	d.hooks.started(c.EffectiveProfile(), false)
	return d.respond(ctx, c)
}

// Status reports the request's status under the response contract.
func (d *Dispatcher) Status(ctx context.Context, minion, request string, profile Profile) (Response, error) {
	t0 := time.Now()
	defer func() { d.hooks.observe("status", time.Since(t0)) }()
	if err := validateIDs(minion, request); err != nil {
		return Response{}, err
	}
	if err := validateProfile(profile); err != nil {
		return Response{}, err
	}
	c, held, err := d.readForStatus(ctx, request)
	if err != nil {
		if errors.Is(err, ErrNoClaim) {
			return notStarted(minion, request), nil
		}
		return Response{}, err
	}
	if err := checkBinding(c, profile, minion); err != nil {
		return Response{}, err
	}
	st, err := d.statusOf(ctx, c, held)
	if err != nil {
		return Response{}, err
	}
	return responseFor(c, st), nil
}

func (d *Dispatcher) respond(ctx context.Context, c *Claim) (Response, error) {
	st, err := d.computeStatus(ctx, c)
	if err != nil {
		return Response{}, err
	}
	return responseFor(c, st), nil
}

func responseFor(c *Claim, st receipt.Status) Response {
	r := Response{MinionID: c.MinionID, RequestID: c.RequestID, Status: st}
	if c.JID != "" {
		j := c.JID
		r.JID = &j
	}
	if c.Phase.Final() {
		r.Passed, r.Total = c.Passed, c.Total
	}
	return r
}

// computeStatus applies the status contract to a claim:
//   - final (terminal/asserted): its recorded status;
//   - more than Timers.StatusExpiry after dispatch: unknown, even if a worker holds the lock;
//   - request lock held: running;
//   - lock free: running within Timers.LaunchGrace of creation, unknown (worker disappeared) after it.
func (d *Dispatcher) computeStatus(ctx context.Context, c *Claim) (receipt.Status, error) {
	return d.statusOf(ctx, c, nil)
}

// statusOf is computeStatus with the request lock's state already read with the claim (held != nil).
func (d *Dispatcher) statusOf(ctx context.Context, c *Claim, held *bool) (receipt.Status, error) {
	if c.Phase.Final() {
		return c.Status, nil
	}
	now := d.clock.Now()
	if c.DispatchedAt != nil && now.Sub(*c.DispatchedAt) > d.timers.StatusExpiry {
		return receipt.StatusUnknown, nil
	}
	if held == nil {
		h, err := d.leases.RequestLockHeld(ctx, c.RequestID)
		if err != nil {
			return "", err
		}
		held = &h
	}
	if *held {
		return receipt.StatusRunning, nil
	}
	if now.Sub(c.CreatedAt) <= d.timers.LaunchGrace {
		return receipt.StatusRunning, nil
	}
	return receipt.StatusUnknown, nil
}

type fixedPublications struct{}

func (fixedPublications) Publication(_ context.Context, c *Claim) (publicationSpec, error) {
	if c.EffectiveProfile() == receipt.ProfileCustom {
		return publicationSpec{}, errors.New("oduflow: custom claims need a custom publication source")
	}
	return publicationSpec{}, nil
}
