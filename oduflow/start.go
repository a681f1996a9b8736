package oduflow

import (
	"context"
	"log/slog"
	"time"

	"github.com/cockroachdb/errors"

	"github.com/oduflow/oduflow-go/internal/errmark"
	"github.com/oduflow/oduflow-go/oduflow/claims"
	"github.com/oduflow/oduflow-go/receipt"
	"github.com/oduflow/oduflow-go/salt"
)

// Start claims the request for profile on minion and launches its worker; a repeated Start returns the
// current status and never publishes again (even while the event bus or the master is down). The custom
// profile needs a custom execution (not Start).
//
// Before it writes a new claim, Start checks that it can dispatch: the master answers its request
// channel (an unauthenticated clear-channel ping, cached for a few seconds, so a burst of Starts shares
// one round trip), its credentials load (the key file reads; an eauth token is cached, or obtained once
// with mk_token) and its event-bus subscription is live (connected now, not reconnecting). Nothing is
// published for the check. When it fails, nothing is written
// and the error matches ErrNotReady and its cause (the event bus or the master unreachable, salt.ErrKeyFile,
// salt.ErrAuthentication, salt.ErrAuthorization); the same request id can be started once fixed. A claim
// store that cannot be read gives ErrClaimStore (or ErrCorruptClaim for a damaged claim).
func (d *Dispatcher) Start(ctx context.Context, minion, request string, profile receipt.Profile) (_ Response, err error) {
	defer errmark.Boundary(&err)
	t0 := time.Now()
	defer func() { d.hooks.observe(ctx, "start", time.Since(t0)) }()
	t, err := d.parseTarget(minion, request)
	if err != nil {
		return Response{}, err
	}
	if err := d.validateProfile(profile); err != nil {
		return Response{}, err
	}
	role, err := d.table.Role(profile)
	if err != nil {
		return Response{}, invalid(err, "profile")
	}
	ctx = withRequest(ctx, RequestRef{Minion: t.minion, RequestID: t.request, Profile: profile})
	if c, err := d.store.Get(ctx, t.request); err == nil {
		ctx = withRequest(ctx, refOf(c))
		return d.existing(ctx, c, profile, t) // even when the bus or the master is down
	} else if !errors.Is(err, claims.ErrNoClaim) {
		return Response{}, claimStoreErr(err)
	}
	if d.isClosing() {
		return Response{}, errors.Wrap(ErrClosed, "oduflow: not admitting new requests")
	}
	// No claim yet: prove, from state already held, that this dispatcher can dispatch before writing one,
	// so that a configuration error burns nothing (ErrNotReady).
	if err := d.ready(ctx); err != nil {
		return Response{}, err
	}
	c := &claims.Claim{Protocol: claimProtocol, MinionID: t.minion, RequestID: t.request, Profile: profile,
		Role: role, JID: string(d.jids.Next()), Phase: claims.PhaseClaimed, CreatedAt: d.clock.Now()}
	ctx = withRequest(ctx, refOf(c))
	return d.create(ctx, c)
}

// create persists a new claim, then launches its worker. When a detached worker cannot be started, the
// claim (still in phase claimed: nothing was published) is committed terminal failed with
// worker_launch_failed, and the response comes with an error matching ErrWorkerLaunch.
func (d *Dispatcher) create(ctx context.Context, c *claims.Claim) (resp Response, err error) {
	err = d.admitNew(func() error {
		resp, err = d.createAdmitted(ctx, c)
		return err
	})
	return resp, err
}

// createAdmitted is create once admitted (Close waits for it).
func (d *Dispatcher) createAdmitted(ctx context.Context, c *claims.Claim) (Response, error) {
	// The launch window opens in the store when Create commits, so never before this instant: an
	// in-process worker that holds the request lock within LaunchGrace of it (this process's monotonic
	// clock) took it while the window was open.
	sent := time.Now()
	if err := d.store.Create(ctx, c); err != nil {
		if errors.Is(err, claims.ErrClaimExists) {
			cur, gerr := d.store.Get(ctx, c.RequestID)
			if gerr != nil {
				return Response{}, gerr
			}
			return d.existing(ctx, cur, c.Profile, targetOf(c))
		}
		return Response{}, err
	}
	d.watchers.changed(c.RequestID)
	d.hooks.started(ctx, c, true)
	lg := d.claimLog(c)
	lg.Info("claim created", slog.String("role", c.Role))
	if err := d.launch(ctx, c, sent); err != nil {
		lg.Error("worker launch failed; nothing published", slog.String("error", err.Error()))
		out := d.failLaunch(ctx, c)
		r, rerr := d.respond(ctx, out)
		if rerr != nil {
			r = responseFor(out, receipt.StatusUnknown)
		}
		return r, &WorkerLaunchError{RequestID: c.RequestID, Cause: err}
	}
	return responseFor(c, receipt.StatusRunning), nil
}

func (d *Dispatcher) existing(ctx context.Context, c *claims.Claim, profile receipt.Profile, t target) (Response, error) {
	if err := checkBinding(c, profile, t.minion); err != nil {
		return Response{}, err
	}
	d.hooks.started(ctx, c, false)
	return d.respond(ctx, c)
}

// The causes of ErrNotReady the dispatcher itself names (each is ErrNotReady for errors.Is).
var (
	// errEventBus: the master event bus cannot be subscribed to.
	errEventBus = errmark.Mark(errors.New("oduflow: event bus unavailable"), ErrNotReady)
	// errMasterUnreachable: the master did not answer its request channel (the readiness ping, or the
	// credential exchange mk_token).
	errMasterUnreachable = errmark.Mark(errors.New("oduflow: master unreachable"), ErrNotReady)
)

// credentialChecker is implemented by a Publisher that can prove its credentials usable without
// publishing anything (*salt.Client: the user key file is read and validated; an eauth token source
// returns its cached token, or exchanges the password once with mk_token). A Publisher without it is
// trusted as is.
type credentialChecker interface {
	CheckAuth(ctx context.Context) error
}

// masterPinger is implemented by a Publisher that can prove the master's request channel answers
// without authenticating or publishing anything (*salt.Client: the clear-channel {cmd: ping}, which the
// master echoes from its request workers; no event, no job, no credential on the wire). A Publisher
// without it is trusted as is.
type masterPinger interface {
	Ping(ctx context.Context) error
}

// readyTimeout bounds the readiness check when nothing is held yet (one mk_token, one subscription).
const readyTimeout = 15 * time.Second

// masterProofTTL is how long a master ping that succeeded proves the request channel for later Starts
// (Timers.MasterProof's default):
// short enough that a master gone for longer refuses new requests before anything is written, long
// enough that a burst of Starts shares one round trip (a hot path pays one atomic load).
const masterProofTTL = 3 * time.Second

// masterPingTimeout bounds one readiness ping (a master that accepts the connection but does not
// answer).
const masterPingTimeout = 5 * time.Second

// ready checks that it can dispatch before a claim is written: the credentials load (a cached token or
// a key file read: no round trip), the master answers its request channel (a clear-channel ping, at
// most once per masterProofTTL, shared by concurrent Starts), and the shared event-bus subscription is
// live (connected once, then held; its connection open now). It never publishes: a test publish would
// put an eauth password on the bus.
func (d *Dispatcher) ready(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	if err := d.masterAnswers(ctx); err != nil {
		return d.notReady(ctx, err)
	}
	if cc, ok := d.pub.(credentialChecker); ok {
		if err := cc.CheckAuth(ctx); err != nil {
			return d.notReady(ctx, err)
		}
	}
	if err := d.hub.live(ctx); err != nil {
		return d.notReady(ctx, errmark.Mark(err, errEventBus))
	}
	return nil
}

// masterProof is Timers.MasterProof, or its default.
func (d *Dispatcher) masterProof() time.Duration {
	if d.timers.MasterProof > 0 {
		return d.timers.MasterProof
	}
	return masterProofTTL
}

// masterProofRefresh: once the master's proof is this old (two thirds of masterProof: 2 s by default) and
// still fresh, the next Start renews it with a ping in the background instead of waiting for it to expire,
// so under a steady flow of Starts none of them waits for the ping (the master's request port may be
// queueing a burst's publications: a ping that waits behind them would hold every concurrent Start).
func (d *Dispatcher) masterProofRefresh() time.Duration { return d.masterProof() * 2 / 3 }

// masterAnswers proves the master's request channel with a ping, or with one that succeeded less than
// masterProof ago. Concurrent callers share one ping; a failure is not cached (the next Start asks
// again). A proof older than masterProofRefresh is renewed by one ping in the background while it still
// stands (refreshMasterProof): no Start ever goes on with a proof older than masterProof.
func (d *Dispatcher) masterAnswers(ctx context.Context) error {
	mp, ok := d.pub.(masterPinger)
	if !ok {
		return nil
	}
	age := func() (time.Duration, bool) {
		at := d.masterProvedAt.Load()
		return time.Since(time.Unix(0, at)), at != 0
	}
	if a, ok := age(); ok && a < d.masterProof() {
		if a >= d.masterProofRefresh() {
			d.refreshMasterProof(mp)
		}
		return nil
	}
	d.masterPingMu.Lock()
	defer d.masterPingMu.Unlock()
	if a, ok := age(); ok && a < d.masterProof() { // another Start pinged while this one waited
		return nil
	}
	pctx, cancel := context.WithTimeout(ctx, masterPingTimeout)
	defer cancel()
	if err := mp.Ping(pctx); err != nil {
		return errmark.Mark(errors.Wrap(err, "oduflow: master ping"), errMasterUnreachable)
	}
	d.masterProvedAt.Store(time.Now().UnixNano())
	return nil
}

// refreshMasterProof pings the master on a goroutine of its own (one at a time, under the dispatcher's
// context: Close ends it) and renews the proof when it answers; a failure leaves the proof to expire, and
// the first Start after that pings and waits as before.
func (d *Dispatcher) refreshMasterProof(mp masterPinger) {
	if !d.masterRefreshing.CompareAndSwap(false, true) {
		return
	}
	d.gate.RLock()
	closing := d.closing
	if !closing {
		d.feedWG.Add(1) // counted under the gate: Close waits for it once it has cancelled d.ctx
	}
	d.gate.RUnlock()
	if closing {
		d.masterRefreshing.Store(false)
		return
	}
	go func() {
		defer d.feedWG.Done()
		defer d.masterRefreshing.Store(false)
		pctx, cancel := context.WithTimeout(d.ctx, masterPingTimeout)
		defer cancel()
		if err := mp.Ping(pctx); err == nil {
			d.masterProvedAt.Store(time.Now().UnixNano())
		}
	}()
}

// notReady marks err with ErrNotReady and the sentinel naming its cause. A cancelled caller gets its
// context's error instead (the configuration may be fine).
func (d *Dispatcher) notReady(ctx context.Context, err error) error {
	if errors.Is(err, errClosed) {
		return err
	}
	if errors.Is(ctx.Err(), context.Canceled) {
		return errors.Wrap(ctx.Err(), "oduflow: readiness check")
	}
	cause := readinessCause(err)
	d.log.Warn("not ready to dispatch; nothing written", "cause", cause.Error())
	return errmark.Mark(errors.Wrap(err, "oduflow: not ready to dispatch (nothing written)"), ErrNotReady, cause)
}

// readinessCause names what failed (cockroachdb's Is sees both its own marks and errmark's).
func readinessCause(err error) error {
	for _, s := range []error{errEventBus, salt.ErrKeyFile, salt.ErrAuthentication, salt.ErrAuthorization} {
		if errors.Is(err, s) {
			return s
		}
	}
	return errMasterUnreachable
}

// claimStoreErr marks a claim-store failure other than a damaged claim with ErrClaimStore.
func claimStoreErr(err error) error {
	if err == nil || errors.Is(err, claims.ErrCorruptClaim) || errors.Is(err, context.Canceled) {
		return err
	}
	return errmark.Mark(err, claims.ErrClaimStore)
}
