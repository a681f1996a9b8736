package oduflow

import (
	"context"
	"log/slog"
	"time"

	"github.com/cockroachdb/errors"

	"github.com/oduflow/oduflow-go/oduflow/claims"
	"github.com/oduflow/oduflow-go/receipt"
	receiptproof "github.com/oduflow/oduflow-go/receipt/proof"
	"github.com/oduflow/oduflow-go/salt"
)

func (d *Dispatcher) stepHook(ctx context.Context, c *claims.Claim, s string) {
	if d.step != nil {
		d.step(s)
	}
	d.hooks.step(ctx, c, s)
}

// launch starts the worker of a freshly created claim whose Create was sent at created (this process's
// monotonic clock). In process, it queues the worker for an admission slot (admitter): a queued worker
// is a closure, not a goroutine.
func (d *Dispatcher) launch(caller context.Context, c *claims.Claim, created time.Time) error {
	if d.mode.detached {
		_, err := d.launchDetached(c)
		return err
	}
	if d.admit.tryAcquire() {
		// A free slot: the worker takes its request lock on its own goroutine, off the Start path (on
		// etcd the lock is a session and a transaction: round trips a Start need not wait for). Until it
		// holds it, Status reads the claimed claim as running within the launch window.
		d.wg.Add(1)
		go func() {
			defer d.wg.Done()
			adm := &admission{a: d.admit, held: true}
			reqLock, ok := d.lockForLaunch(c)
			if !ok {
				adm.release()
				return
			}
			d.runWorkerFor(d.workerContext(caller), c, reqLock, d.launchWindowAt(created), adm)
		}()
		return nil
	}
	// No free slot: take the request lock now, so that the queued worker holds it (Status reads it
	// running) while it waits as a closure, not a goroutine.
	reqLock, ok := d.lockForLaunch(c)
	if !ok {
		return nil
	}
	window := d.launchWindowAt(created)
	d.wg.Add(1)
	d.admit.run(func() {
		defer d.wg.Done()
		d.runWorkerFor(d.workerContext(caller), c, reqLock, window, &admission{a: d.admit, held: true})
	})
	return nil
}

// workerContext is the context of an in-process worker launched by a Start whose ctx was caller: the
// dispatcher's cancellation (Close), the caller's values (a span or W3C trace context a tracer put there,
// so the worker's hook events continue the caller's trace: Hooks), never the caller's cancellation or
// deadline (the Start call returns long before the request is final).
func (d *Dispatcher) workerContext(caller context.Context) context.Context {
	return workerCtx{Context: d.ctx, values: caller}
}

// workerCtx is d.ctx with the values of another context behind its own: the context package's own keys
// (its cancellation plumbing) resolve in d.ctx, so children of a workerCtx are cancelled through d.ctx
// without a goroutine, and every other key falls through to the caller's values.
type workerCtx struct {
	context.Context
	values context.Context
}

func (w workerCtx) Value(key any) any {
	if v := w.Context.Value(key); v != nil {
		return v
	}
	return w.values.Value(key)
}

// launchWindow is what a worker knows, when it starts, of the launch window in which its request lock was
// taken: measured by its launcher (open or closed), or to be read from the store (a detached worker).
type launchWindow int

const (
	launchWindowFromStore launchWindow = iota // read it as the store measures it now (workerClaim)
	launchWindowOpen                          // the launcher took the lock within the window
	launchWindowClosed                        // the launcher took the lock after the window
)

// launchWindowAt is the launch window of a request lock taken now by an in-process worker of a claim
// whose Create was sent at created: measured on this process's monotonic clock from before the window
// opened in the store, so "within" here implies "still open there" (the store's window lasts at least
// LaunchGrace from its creation, which came later).
func (d *Dispatcher) launchWindowAt(created time.Time) launchWindow {
	if time.Since(created) <= d.timers.LaunchGrace {
		return launchWindowOpen
	}
	return launchWindowClosed
}

// lockForLaunch takes c's request lock for an in-process worker; false when another worker holds it
// (nothing to do) or the lock failed. A lock that fails (not busy: the lease store cannot be used) would
// leave the claim claimed, reading running for the launch grace and unknown after it, for a request that
// can never have been published: it is committed failed (claim_store_unreadable) instead, while still
// claimed.
func (d *Dispatcher) lockForLaunch(c *claims.Claim) (claims.Lease, bool) {
	reqLock, err := d.tryRequestLock(d.ctx, c.RequestID)
	if err != nil {
		if !errors.Is(err, claims.ErrLeaseBusy) { // busy: another worker runs this request
			d.claimLog(c).Warn("worker: request lock unusable; nothing published", slog.String("error", err.Error()))
			d.failUnlocked(d.ctx, c)
		}
		return nil, false
	}
	return reqLock, true
}

// failUnlocked commits c failed (claim_store_unreadable, evidence preflight) if it is still in phase
// claimed: without its request lock no worker can have recorded its intent, and the fenced update loses to
// any worker that did meanwhile.
func (d *Dispatcher) failUnlocked(ctx context.Context, c *claims.Claim) {
	out, changed, err := d.updateClaim(ctx, c, func(next *claims.Claim) bool {
		if next.Phase != claims.PhaseClaimed {
			return false
		}
		now := d.clock.Now()
		next.Phase, next.Status, next.Passed, next.Total = claims.PhaseTerminal, receipt.StatusFailed, 0, 1
		next.ErrorCode, next.Evidence, next.FinishedAt = claims.CodeClaimStore, evidencePreflight, &now
		return true
	})
	if err != nil {
		d.claimLog(c).Error("worker: commit of the lock failure", slog.String("error", err.Error()))
		return
	}
	if changed {
		d.hooks.outcome(ctx, out, out.Status, claims.CodeClaimStore)
	}
}

// runWorkerFor runs the worker steps of c on the calling goroutine, holding reqLock and an admission slot.
func (d *Dispatcher) runWorkerFor(ctx context.Context, c *claims.Claim, reqLock claims.Lease, window launchWindow, adm *admission) {
	if err := d.work(ctx, targetOf(c), reqLock, window, adm); err != nil {
		d.claimLog(c).Warn("worker ended with error", slog.String("error", err.Error()))
	}
}

// tryRequestLock takes the request lock, trying again for a moment: a Status probe of the lock (with a
// store whose probe takes it for an instant) must not make a starting worker believe another worker runs
// the request. A real
// holder keeps the lock for its whole run, so it is still held after the retries.
func (d *Dispatcher) tryRequestLock(ctx context.Context, request string) (claims.Lease, error) {
	for attempt := 0; ; attempt++ {
		lk, err := d.leases.TryRequestLock(ctx, request)
		if err == nil || !errors.Is(err, claims.ErrLeaseBusy) || attempt >= 20 {
			return lk, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// runKwargs are the keyword arguments of the run publication: the fence token, and with a table other
// than the seeds' its digest (profile_table), which the module checks against its own table before
// anything runs. The seeds' table sends exactly what protocol 1 always sent.
func (d *Dispatcher) runKwargs(c *claims.Claim) map[string]any {
	kw := map[string]any{"fence_token": int64(c.FenceToken)}
	if !d.table.IsDefault() {
		kw["profile_table"] = d.table.Digest()
	}
	return kw
}

// checkRole validates the persisted profile/role pair against the profile table.
func (d *Dispatcher) checkRole(c *claims.Claim) error {
	want, err := d.table.Role(c.Profile)
	if err != nil || want != c.Role {
		return errors.Wrapf(errRoleNotAllowed, "profile %q", errors.Safe(string(c.Profile)))
	}
	return nil
}

// runWorker executes the worker steps for one claim (a detached worker process) and returns when the
// request is final or abandoned.
func (d *Dispatcher) runWorker(ctx context.Context, minion, request string) error {
	t, err := d.parseTarget(minion, request)
	if err != nil {
		return err
	}
	reqLock, err := d.tryRequestLock(ctx, t.request)
	if err != nil {
		if errors.Is(err, claims.ErrLeaseBusy) {
			return nil // another worker runs this request
		}
		return err
	}
	return d.work(ctx, t, reqLock, launchWindowFromStore, nil)
}

// work executes the worker steps (package documentation, Worker) for one claim whose request lock the
// caller took (work releases it): within the launch window as window says (launchWindowFromStore: as the
// store reads it now; the lock is already held, so it was open when the lock was taken if it is open
// now). It publishes oduflow_job.run at most once, and only from phase claimed while holding the request
// lock and the client lease. With an admission (in-process workers), once the run publication is made
// the slot is freed and the wait for the return goes on parked, without a goroutine (awaitParked), owning
// the leases and the event waiter; work returns.
//
// The steps are phases of one workerRun, a method each, each saying explicitly whether the run goes on
// (proceed) and putting what it acquires into the run's hold: claim (may this worker dispatch it at
// all), preflight (the client lease and the event waiter), intent (the one fenced transition to
// dispatching), publish (the publication's deadline and the one publication) and handOff (the wait for
// the return: parked, taking the hold with it, or on this goroutine). Whatever the hold still has when
// work returns is released by endWork, once; a hand-off leaves it empty.
func (d *Dispatcher) work(ctx context.Context, t target, reqLock claims.Lease, window launchWindow, adm *admission) error {
	r := &workerRun{d: d, t: t, window: window, adm: adm, hold: workerHold{reqLock: reqLock}}
	defer d.endWork(ctx, t, reqLock, &r.hold, adm) // the caller's ctx, not the request's below
	if next, err := r.claim(ctx); next == stop {
		return err
	}
	ctx = withRequest(ctx, refOf(r.c))
	for _, phase := range []func(context.Context) (phaseResult, error){r.preflight, r.intent, r.publish} {
		if next, err := phase(ctx); next == stop {
			return err
		}
	}
	return r.handOff(ctx)
}

// phaseResult is what a phase of a workerRun decided: the run goes on to the next phase, or it ends here
// (with the phase's error, nil when the phase ended it by design: a committed failure, a claim another
// worker owns, a result someone else committed).
type phaseResult bool

const (
	proceed phaseResult = true
	stop    phaseResult = false
)

// workerRun is one worker's run of one request: what it was given (the target, the launch window, the
// admission) and what its phases settled (the claim, the dispatch plan, the publication) and acquired
// (the hold).
type workerRun struct {
	d      *Dispatcher
	t      target
	window launchWindow
	adm    *admission
	hold   workerHold
	c      *claims.Claim // the claim as the last phase read or wrote it
	plan   dispatchPlan  // preflight's settlement, for the intent and the publication
	pub    published     // publish's publication, for the hand-off
}

func (r *workerRun) claim(ctx context.Context) (phaseResult, error) {
	c, next, err := r.d.claimToDispatch(ctx, r.t, r.window, r.adm)
	r.c = c
	return next, err
}

func (r *workerRun) preflight(ctx context.Context) (phaseResult, error) {
	plan, next, err := r.d.preflightPhase(ctx, r.c, &r.hold)
	if next == proceed {
		r.plan = *plan
	}
	return next, err
}

func (r *workerRun) intent(ctx context.Context) (phaseResult, error) {
	c, next, err := r.d.intentPhase(ctx, r.c, &r.hold, &r.plan)
	if next == proceed {
		r.c = c
	}
	return next, err
}

func (r *workerRun) publish(ctx context.Context) (phaseResult, error) {
	pub, next, err := r.d.publishPhase(ctx, r.t, r.c, &r.hold, &r.plan, r.adm)
	if next == proceed {
		r.pub = *pub
	}
	return next, err
}

func (r *workerRun) handOff(ctx context.Context) error {
	return r.d.handOffPhase(ctx, &r.pub, &r.hold, r.adm)
}

// endWork releases what the worker's hold h still has when work returns, newest first: what the
// preflight and publish phases acquired, then (failClosed needs the request lock, and looks at it even
// when a parked wait holds it now) the admission slot and the request lock.
func (d *Dispatcher) endWork(ctx context.Context, t target, reqLock claims.Lease, h *workerHold, adm *admission) {
	h.releaseDispatch()
	d.failClosed(ctx, t, reqLock) // before the lock's release: a claim left claimed by Close
	adm.release()
	h.release() // the request lock, unless the wait was handed off with it
}

// workerHold is what one worker holds for its claim, each acquired by one phase of work: the request
// lock (taken before work), the client lease and the event waiter (preflightPhase), the context bounding
// the publication and the wait by the hard deadline (publishPhase). Each is released exactly once, newest
// first; take moves the whole hold to the parked wait, which releases it once the result is committed.
type workerHold struct {
	reqLock claims.Lease
	lease   claims.Lease
	w       *waiter
	cancel  context.CancelFunc
}

// releaseDispatch releases what the preflight and publish phases acquired (not the request lock).
func (h *workerHold) releaseDispatch() {
	if h.cancel != nil {
		h.cancel()
		h.cancel = nil
	}
	if h.w != nil {
		h.w.close()
		h.w = nil
	}
	h.releaseLease()
}

// releaseLease releases the client lease early (a publish whose outcome is unknown: the quarantine
// guards the client from then on).
func (h *workerHold) releaseLease() {
	if h.lease != nil {
		_ = h.lease.Release()
		h.lease = nil
	}
}

// release releases everything still held: releaseDispatch, then the request lock.
func (h *workerHold) release() {
	h.releaseDispatch()
	if h.reqLock != nil {
		_ = h.reqLock.Release()
		h.reqLock = nil
	}
}

// take hands the hold over to a parked wait: the context is cancelled (the parked wait needs none: the
// hard deadline bounds its window instead), everything else moves to the returned hold, and h holds
// nothing. The hold is returned as a value, for the parked wait's closure to carry without an
// allocation of its own (releaseTaken).
func (h *workerHold) take() workerHold {
	if h.cancel != nil {
		h.cancel()
	}
	moved := workerHold{reqLock: h.reqLock, lease: h.lease, w: h.w}
	*h = workerHold{}
	return moved
}

// releaseTaken releases a hold take returned (a copy of it: the closure's own is never addressed, so it
// stays in the closure).
func releaseTaken(h workerHold) { h.release() }

// failPreflight commits c failed 0 of 1 with code and evidence preflight: a check before the publication
// refused, nothing was published.
func (d *Dispatcher) failPreflight(ctx context.Context, c *claims.Claim, code claims.ErrorCode) {
	d.finalize(ctx, c, receipt.StatusFailed, 0, 1, code, evidencePreflight)
}

// claimToDispatch reads the worker's claim and decides whether this worker may dispatch it: the claim is
// returned only when it is bound to t's minion, still in phase claimed (not a legacy one) and its request
// lock was taken within the launch window (proceed). Otherwise stop: err for a claim that cannot be read or is bound
// to another minion; a claim past phase claimed is polled (a detached Resume within its window, its
// admission slot freed) or left as it is; a launch after the window is committed unknown, never
// dispatched.
func (d *Dispatcher) claimToDispatch(ctx context.Context, t target, window launchWindow, adm *admission) (*claims.Claim, phaseResult, error) {
	c, launchOpen, err := d.workerClaim(ctx, t, window)
	if err != nil {
		return nil, stop, err
	}
	if c.MinionID != t.minion {
		return nil, stop, &mismatchError{Field: "minion_id", Bound: c.MinionID}
	}
	ctx = withRequest(ctx, refOf(c))
	if c.Phase != claims.PhaseClaimed || c.Legacy() {
		if deadline, ok := d.resumeWindow(c); ok {
			// A detached Resume: poll the unknown dispatched request (never publish it again).
			adm.release()
			d.resumePolling(ctx, c, deadline)
			return nil, stop, nil
		}
		d.claimLog(c).Info("worker: claim past phase claimed; never dispatched twice", slog.String("phase", string(c.Phase)))
		return nil, stop, nil
	}
	// The launch window when the request lock was taken: a wait for admission since then was reported
	// running.
	if !launchOpen {
		// Status may have been reporting this launch as unknown (worker disappeared): never dispatch it now.
		d.claimLog(c).Warn("worker: started after the launch window; not dispatching")
		d.finalize(ctx, c, receipt.StatusUnknown, 0, 0, claims.CodeWorkerLost, evidenceNone)
		return nil, stop, nil
	}
	return c, proceed, nil
}

// dispatchPlan is what the preflight settled for the intent and the publication.
type dispatchPlan struct {
	keySHA    string // the key the master accepted for the minion: pinned in the claim
	fenceMark uint64 // the minion's fence high-water mark: the floor of the token
	spec      publicationSpec
	jid       salt.JID
	runProof  bool // the module signs the run's terminal receipt in its return (minionCaps.RunProof)
}

// preflightPhase runs the checks before the intent on c, read in phase claimed: the role, the client
// lease and the client's other requests (leaseAndClear), the minion (preflight), the publication, then
// the event waiter, subscribed before anything is published. The lease and the waiter go into h. It
// returns what the intent and the publication need (proceed), or stop when the worker ends: a preflight failure
// committed (failPreflight: nothing was published), or err.
func (d *Dispatcher) preflightPhase(ctx context.Context, c *claims.Claim, h *workerHold) (*dispatchPlan, phaseResult, error) {
	d.stepHook(ctx, c, stepClaimed)
	if c.Profile != receipt.ProfileCustom {
		if err := d.checkRole(c); err != nil {
			d.failPreflight(ctx, c, claims.CodeRoleNotAllowed)
			return nil, stop, err
		}
	}
	lease, code, err := d.leaseAndClear(ctx, c)
	if err != nil {
		return nil, stop, err
	}
	if lease == nil {
		d.failPreflight(ctx, c, code)
		return nil, stop, nil
	}
	h.lease = lease
	d.stepHook(ctx, c, stepLease)
	plan := &dispatchPlan{}
	if code == "" {
		code, plan.keySHA, plan.fenceMark, plan.runProof = d.preflight(ctx, c)
	}
	if code != "" {
		if ctx.Err() != nil {
			return nil, stop, ctx.Err()
		}
		d.claimLog(c).Warn("worker: preflight failure; nothing published", slog.String("code", string(code)))
		d.failPreflight(ctx, c, code)
		return nil, stop, nil
	}
	if plan.spec, err = d.pubsrc.Publication(ctx, c); err != nil {
		d.failPreflight(ctx, c, claims.CodePayload)
		return nil, stop, nil
	}
	plan.jid = salt.JID(c.JID)
	w, err := d.hub.watch(ctx, plan.jid) // subscribe BEFORE publishing: the bus has no replay
	if err != nil {
		if ctx.Err() != nil {
			return nil, stop, ctx.Err()
		}
		d.claimLog(c).Warn("worker: event bus unavailable; preflight failure, nothing published", slog.String("error", err.Error()))
		d.failPreflight(ctx, c, claims.CodeEventBus)
		return nil, stop, nil
	}
	h.w = w
	return plan, proceed, nil
}

// intentPhase records the dispatch intent durably: from here on the request may have been published. It
// returns the claim in phase dispatching with its fencing token (proceed), or stop when nothing may be published:
// err when the intent was not recorded (or its outcome stays undecided), or a committed failure for a
// token the minion would refuse.
func (d *Dispatcher) intentPhase(ctx context.Context, c *claims.Claim, h *workerHold, plan *dispatchPlan) (*claims.Claim, phaseResult, error) {
	dispatchedAt := d.clock.Now()
	next := c.Clone()
	next.Phase = claims.PhaseDispatching
	next.DispatchedAt = &dispatchedAt
	next.MinionKeySHA256 = plan.keySHA // only proofs signed by this key are evidence for this request
	// The floor of the token: the minion's high-water mark, so a new or restored store (or one that
	// shares the client with another) issues a token the minion accepts. A floor only raises a token.
	next.FenceToken = plan.fenceMark
	// The one fenced transition: the intent is recorded only while this worker still holds the request
	// lock and the client lease (ClaimStore.CompareAndSwapHeld), so a worker whose leases expired never
	// records an intent and never publishes.
	c, err := d.store.CompareAndSwapHeld(ctx, next, h.reqLock, h.lease)
	if err == nil {
		d.watchers.changed(next.RequestID)
	}
	if err != nil {
		if !isOutcomeUnknown(err) {
			return nil, stop, errors.Wrap(err, "oduflow: record dispatch") // nothing written, nothing published
		}
		// The acknowledgement was lost: the intent may be recorded. Publish only once it is proven to be
		// this worker's (settleIntent); otherwise nothing is published and the request ends unknown.
		var mine bool
		if c, mine = d.settleIntent(ctx, next, h.reqLock, h.lease); !mine {
			return nil, stop, errors.Wrap(err, "oduflow: record dispatch (outcome undecided, nothing published)")
		}
	}
	if c.FenceToken < 1 || c.FenceToken > claims.MaxFenceToken {
		// A claim store that issues no fencing token breaks the ClaimStore contract: never publish
		// unfenced. Nothing was sent.
		d.claimLog(c).Error("worker: the claim store issued no fencing token; nothing published")
		d.failPreflight(ctx, c, claims.CodeClaimStore)
		return nil, stop, nil
	}
	if c.FenceToken <= plan.fenceMark {
		// The store ignored the floor: the minion would refuse this token. Fail typed instead of
		// publishing a run that can only be fenced. Nothing was sent.
		d.claimLog(c).Error("worker: fencing token not above the minion's mark; nothing published",
			slog.Uint64("fence_token", c.FenceToken), slog.Uint64("fence_mark", plan.fenceMark))
		d.failPreflight(ctx, c, claims.CodeFenceBehind)
		return nil, stop, nil
	}
	d.stepHook(ctx, c, stepDispatchRecorded)
	return c, proceed, nil
}

// published is a run publication the master accepted: the claim (dispatched, unless that write failed
// with no final result committed meanwhile), the context bounding its wait by the hard deadline, when
// the publication began, and the proof nonce it carried (kept in memory only: a worker that dies is
// adopted, and its adopter proves the receipt with attest and a fresh nonce).
type published struct {
	c     *claims.Claim
	wctx  context.Context
	start time.Time
	nonce string // the run's proof_nonce ("" when the module does not sign its return)
}

// publishPhase publishes oduflow_job.run for c, once, never retried, under a context bounded by the hard
// deadline (its cancel goes into h), and records phase dispatched. It returns stop when the worker ends
// here: a refused publish committed failed (nothing was published), a publish whose outcome is unknown
// (committed unknown and listened for: listenAfterUnknownPublish), or a final result someone else
// committed meanwhile.
func (d *Dispatcher) publishPhase(ctx context.Context, t target, c *claims.Claim, h *workerHold, plan *dispatchPlan, adm *admission) (*published, phaseResult, error) {
	start := time.Now()
	wctx, cancel := context.WithDeadline(ctx, start.Add(d.timers.HardDeadline))
	h.cancel = cancel

	d.stepHook(ctx, c, stepPublishSending)
	// The fencing token goes as Salt's keyword argument (a trailing {"__kwarg__": true, ...} map): the
	// minion starts the run only if the token is above every token it has started or fenced. A module
	// that signs its run's return (plan.runProof) gets a fresh proof nonce as well: its terminal receipt
	// then comes back signed over it, and no attest call is needed (awaitLoop.onReturn).
	kwargs := d.runKwargs(c)
	var nonce string
	if plan.runProof {
		nonce = receiptproof.NewNonce()
		kwargs["proof_nonce"] = nonce
	}
	_, err := d.publishSlotted(wctx, t.minion, funRun, []any{c.RequestID, string(c.Profile), plan.spec.StateDataJSON},
		kwargs, plan.jid, nil)
	if err != nil {
		code := publishErrorCode(err)
		if salt.IsNotPublished(err) && !salt.IsOutcomeUnknown(err) {
			d.claimLog(c).Warn("worker: publish refused; nothing published", slog.String("code", string(code)))
			d.finalize(ctx, c, receipt.StatusFailed, 0, 1, code, evidenceRefused)
			return nil, stop, nil
		}
		d.claimLog(c).Error("worker: publish outcome unknown; never retried; client quarantined", slog.String("code", string(code)))
		adm.release()
		return nil, stop, d.listenAfterUnknownPublish(ctx, wctx, c, h, start, nonce)
	}
	next := c.Clone()
	next.Phase = claims.PhaseDispatched
	if nc, err := d.store.CompareAndSwap(ctx, next); err == nil {
		c = nc
		d.watchers.changed(next.RequestID)
	} else if cur, gerr := d.store.Get(ctx, t.request); gerr == nil && cur.Phase.Final() {
		return nil, stop, nil // someone else committed a final result
	}
	d.stepHook(ctx, c, stepPublishReplied)
	d.claimLog(c).Info("worker: published", slog.String("fun", funRun))
	return &published{c: c, wctx: wctx, start: start, nonce: nonce}, proceed, nil
}

// handOffPhase waits for the return of the published run and commits the final result. The admission
// slot is freed first: waiting needs none. Without an admission (a detached worker process, one request)
// the wait runs on this goroutine. Otherwise it goes on without one (awaitParked), taking the hold with
// it (take), and releases it once the result is committed. It needs no context of its own (a context,
// its timer and its children cost as much as the rest of the wait): the hard deadline bounds its window
// instead, and every call it makes is bounded by that window.
func (d *Dispatcher) handOffPhase(ctx context.Context, p *published, h *workerHold, adm *admission) error {
	adm.release() // waiting for the return needs no admission slot
	if adm == nil {
		return d.awaitDispatched(ctx, p.wctx, p.c, h.w, p.start, p.nonce)
	}
	parked := h.take()
	c, start := p.c, p.start // not p: the parked wait keeps no reference to p.wctx
	d.wg.Add(1)
	window := earlier(start.Add(d.timers.ExecutionWait), start.Add(d.timers.HardDeadline))
	d.awaitParked(ctx, c, parked.w, window, p.nonce, func(r *receipt.Receipt) {
		defer d.wg.Done()
		defer releaseTaken(parked)
		if err := d.settleDispatched(ctx, c, r, start); err != nil {
			d.claimLog(c).Warn("worker ended with error", slog.String("error", err.Error()))
		}
	})
	return nil
}

// workerClaim reads the worker's claim and whether its request lock, held by the caller, was taken
// within the launch window: as the caller measured it, else (launchWindowFromStore) the window as the
// store reads it now (or, for a store that does not measure the windows, this dispatcher's clock against
// CreatedAt).
func (d *Dispatcher) workerClaim(ctx context.Context, t target, window launchWindow) (*claims.Claim, bool, error) {
	if window == launchWindowFromStore && d.windows != nil {
		c, lv, err := d.windows.GetWithLiveness(ctx, t.request)
		return c, lv.LaunchOpen, err
	}
	c, err := d.store.Get(ctx, t.request)
	if err != nil {
		return nil, false, err
	}
	if window != launchWindowFromStore {
		return c, window == launchWindowOpen, nil
	}
	return c, d.clock.Now().Sub(c.CreatedAt) <= d.timers.LaunchGrace, nil
}

// awaitDispatched waits for the verified return of the published claim c (whose run carried nonce, or
// "") and commits the final result.
func (d *Dispatcher) awaitDispatched(ctx, wctx context.Context, c *claims.Claim, w *waiter, start time.Time, nonce string) error {
	return d.settleDispatched(ctx, c, d.await(wctx, c, w, start.Add(d.timers.ExecutionWait), nonce), start)
}

// settleDispatched commits the final result of the published claim c from what the wait returned (r).
func (d *Dispatcher) settleDispatched(ctx context.Context, c *claims.Claim, r *receipt.Receipt, start time.Time) error {
	if ctx.Err() != nil {
		return ctx.Err() // dispatcher closed: the claim stays dispatched (unknown once its lock is free)
	}
	d.hooks.observe(ctx, "dispatch_to_final", time.Since(start))
	if r == nil {
		d.claimLog(c).Warn("worker: no trustworthy receipt within the window or budget; unknown")
		d.finalize(ctx, c, receipt.StatusUnknown, 0, 0, claims.CodeNoTrustworthyReturn, evidenceNone)
		return nil
	}
	d.stepHook(ctx, c, stepReturned)
	if code, refused := d.refusals.LoadAndDelete(c.RequestID); refused && r.Fenced() {
		// The minion refused the run (its return said so) and then signed that the publication never ran
		// (fenced): final at once, failed 0 of 1 with the refusal's code.
		d.finalize(ctx, c, receipt.StatusFailed, 0, 1, code.(claims.ErrorCode), evidenceFenced)
		d.stepHook(ctx, c, stepCommitted)
		return nil
	}
	d.finalize(ctx, c, r.Status, r.Passed, r.Total, receiptCode(r), evidenceReceipt)
	d.stepHook(ctx, c, stepCommitted)
	return nil
}

// leaseAndClear takes the client lease (waiting at most Timers.LeaseWait) and checks the client's other
// requests (clientCheck). It returns the lease and "" when the preflight may go on; nil and the error code
// when the lease could not be had (lease_busy, or claim_store_unreadable for an unusable lease store);
// the lease and the code when the check refused. A client quarantined by a request this Dispatcher can
// adopt (WithAdoption: dispatched, its worker gone, its window open) is not refused at once: the lease is
// released for the adopter (the adoption loop is woken), and taken again, until the request is resolved
// or adopted (then the client is busy) or the lease wait is spent. So a request started during a
// rolling restart waits for its client's orphaned request instead of failing quarantined.
func (d *Dispatcher) leaseAndClear(ctx context.Context, c *claims.Claim) (claims.Lease, claims.ErrorCode, error) {
	by := time.Now().Add(d.timers.LeaseWait)
	for {
		lease, err := d.leases.AcquireClientLease(ctx, c.MinionID, max(time.Until(by), 0))
		if err != nil {
			if ctx.Err() != nil {
				return nil, "", ctx.Err()
			}
			if !errors.Is(err, claims.ErrLeaseBusy) {
				// Not a live holder: the lease file itself is unusable (a FIFO, a foreign file, ...).
				d.claimLog(c).Warn("worker: client lease unusable; preflight failure", slog.String("error", err.Error()))
				return nil, claims.CodeClaimStore, nil
			}
			d.claimLog(c).Warn("worker: client lease busy; preflight failure")
			return nil, claims.CodeLeaseBusy, nil
		}
		code, blocker := d.clientCheck(ctx, c)
		if code != claims.CodeQuarantined || !d.adoption.on || time.Now().After(by) || !d.adoptable(ctx, blocker) {
			return lease, code, nil
		}
		_ = lease.Release()
		d.kickAdoption()
		select {
		case <-ctx.Done():
			return nil, "", ctx.Err()
		case <-time.After(adoptRecheck):
		}
	}
}

// preflight runs with the client lease held: quarantine across all profiles, the capability check (the
// minion must advertise receipt proofs), then the key the master accepted for the minion. It returns an
// error code, or "" and that key's fingerprint (pinned in the claim) when dispatch may go on.
// clientCheck is the preflight's look at the client's other unresolved requests (the unresolved set, not
// its history): "" when c may be dispatched, else the error code. An unreadable set refuses
// (claim_store_unreadable, naming the claim); the one quarantine rule (blocksClient) refuses quarantined;
// another dispatched request a live worker, adopter or Resume holds refuses lease_busy (it may be running
// on the minion); a JID drawn twice refuses jid_collision.
func (d *Dispatcher) clientCheck(ctx context.Context, c *claims.Claim) (claims.ErrorCode, *claims.Claim) {
	others, err := listUnresolved(ctx, d.store, c.MinionID) // not the client's history: its open requests
	if err != nil {
		// Cannot prove the client is clear: refuse, but say why and which claim, not "quarantined".
		attrs := []any{slog.String("error", err.Error())}
		var uc unreadableClaim
		if errors.As(err, &uc) {
			attrs = append(attrs, slog.String("unreadable_request_id", uc.UnreadableRequestID()))
		}
		d.claimLog(c).Warn("worker: client claims unreadable; preflight failure", attrs...)
		return claims.CodeClaimStore, nil
	}
	for _, o := range others {
		if o.RequestID == c.RequestID {
			continue
		}
		if o.Quarantining() {
			// The one quarantine rule (blocksClient): unknown blocks; a request a live worker, adopter or
			// Resume holds makes the client busy instead (it may be running on the minion).
			o, st, err := d.computeStatus(ctx, o)
			if err != nil {
				d.claimLog(c).Warn("worker: client claims unreadable; preflight failure", slog.String("error", err.Error()))
				return claims.CodeClaimStore, nil
			}
			if blocksClient(o, st) {
				d.claimLog(c).Warn("worker: client quarantined", slog.String("blocking_request_id", o.RequestID))
				return claims.CodeQuarantined, o
			}
			d.claimLog(c).Warn("worker: client busy with a request being polled", slog.String("busy_request_id", o.RequestID))
			return claims.CodeLeaseBusy, o
		}
		if o.JID == c.JID {
			// Two dispatcher processes drew the same JID in the same microsecond for one client: the minion
			// would refuse the second binding. Fail before publishing; a retry is a new request.
			return claims.CodeJIDCollision, o
		}
	}
	return "", nil
}

// preflight checks the minion before the intent: it answers an error code ("" when clear), the key the
// master accepted for the minion (its SHA-256), the minion's fence high-water mark and whether its module
// signs its run's return (the run then carries a proof nonce; a module without it would refuse one).
func (d *Dispatcher) preflight(ctx context.Context, c *claims.Claim) (code claims.ErrorCode, keySHA string, fenceMark uint64, runProof bool) {
	// CallTimeout bounds the check from its publication on (call), not the wait for a publish slot.
	// Within Timers.CapabilityReuse a clear answer already in hand stands for the call (capcache.go).
	caps, reused := d.reusedCaps(c.MinionID)
	var err error
	if !reused {
		caps, err = d.capabilities(ctx, c.MinionID)
	}
	if err != nil {
		if errors.Is(err, errNoReturn) && d.hub.isStalled() {
			return claims.CodeEventBus, "", 0, false // no return because the bus delivers nothing, not the minion's fault
		}
		return callErrorCode(err), "", 0, false // names the cause: credentials, event bus, transport, or the minion
	}
	if caps.Protocol == protocolVersion && !caps.RuntimeGuard {
		// The module would refuse the run ("refusing to run unprotected"): fail now, nothing published.
		// Its reason (bounded, printable: see guardReason) names the Salt internal it did not recognise.
		d.claimLog(c).Warn("worker: the minion module's runtime guard fails; nothing published",
			slog.String("runtime_guard_error", caps.GuardError))
		return claims.CodeRuntimeGuard, "", 0, false
	}
	if caps.Protocol == protocolVersion && caps.FenceExhausted {
		// No token above the minion's mark exists: the store cannot issue one (a floor at MaxFenceToken)
		// and the minion would refuse any other. A typed failure now, nothing published, no quarantine.
		d.claimLog(c).Error("worker: the minion's fence counter is exhausted; nothing published",
			slog.Uint64("fence_mark", caps.FenceMark))
		return claims.CodeFenceExhausted, "", 0, false
	}
	if caps.Protocol != protocolVersion || !caps.Proof || !caps.Fencing {
		return claims.CodeCapability, "", 0, false // no silent fallback to unproven receipts or unfenced runs
	}
	if !d.sameTable(caps) {
		// Another table on the minion: the profile would run other states there (or none). Never
		// defaulted: a minion without a table holds the seeds' one.
		d.claimLog(c).Warn("worker: the minion's profile table differs from the dispatcher's; nothing published",
			slog.String("dispatcher_table", d.table.Digest()), slog.Bool("minion_reports_table", caps.ProfileTable != profileTableUnreported))
		return claims.CodeProfileTableMismatch, "", 0, false
	}
	key, err := loadMinionKey(ctx, d.pkiDir, c.MinionID)
	if err != nil {
		d.claimLog(c).Warn("worker: accepted minion key unavailable", slog.String("error", err.Error()))
		return claims.CodeMinionKey, "", 0, false
	}
	return "", key.SHA256, caps.FenceMark, caps.RunProof
}

// listenAfterUnknownPublish handles a publish whose outcome is unknown: the claim is committed unknown at
// once (so Status is honest and the client is quarantined), the client lease is released (the quarantine
// now guards the client), and the worker goes on, exactly as after a normal publish, listening for the
// return and polling oduflow_job.status for the rest of the window and budget. The publish is never
// repeated. A trustworthy terminal receipt bound to the claim replaces unknown (and so releases the
// quarantine); a minion answering not_started never does.
func (d *Dispatcher) listenAfterUnknownPublish(ctx, wctx context.Context, c *claims.Claim, h *workerHold, start time.Time, nonce string) error {
	lg := d.claimLog(c)
	cur := d.finalize(ctx, c, receipt.StatusUnknown, 0, 0, claims.CodeOutcomeUnknown, evidenceNone)
	if cur == nil || cur.Phase != claims.PhaseTerminal || cur.Status != receipt.StatusUnknown {
		return nil // not committed, or someone else committed another final result (kept)
	}
	h.releaseLease()
	// The run may be out, and may sign its return over nonce.
	r := d.await(wctx, cur, h.w, start.Add(d.timers.ExecutionWait), nonce)
	d.refusals.Delete(cur.RequestID) // a fenced refusal commits as fenced here (replaceUnknown)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if r == nil || !r.Status.Terminal() {
		lg.Warn("worker: no trustworthy receipt after the unknown publish; stays unknown")
		return nil
	}
	d.stepHook(ctx, c, stepReturned)
	if err := d.replaceUnknown(ctx, cur, r, "worker"); err != nil {
		return nil
	}
	d.stepHook(ctx, c, stepCommitted)
	return nil
}

// callErrorCode names the cause of a failed read-only preflight call (capabilities) for the claim: the
// credentials, the event bus, the master's transport, a minion the master does not know (CodeNoMinions,
// as a publish would); CodeCapability when the minion did not answer protocol 1.
func callErrorCode(err error) claims.ErrorCode {
	switch {
	case errors.Is(err, errEventBus):
		return claims.CodeEventBus
	case errors.Is(err, salt.ErrAuthentication):
		return claims.CodeAuthentication
	case errors.Is(err, salt.ErrAuthorization):
		return claims.CodeAuthorization
	case errors.Is(err, salt.ErrNotSent):
		return claims.CodeNotSent
	case errors.Is(err, salt.ErrNoMinions):
		return claims.CodeNoMinions // the master matched no minion: its key is not accepted, or it is not connected
	}
	return claims.CodeCapability
}

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

// receiptCode is the error code recorded with a verified receipt r: fenced when the minion refused the
// run for its fencing token (nothing ran), minion_reported_unknown for its own unknown, "" otherwise.
func receiptCode(r *receipt.Receipt) claims.ErrorCode {
	switch {
	case r.Fenced():
		return claims.CodeFenced
	case r.Status == receipt.StatusUnknown:
		return claims.CodeMinionUnknown
	}
	return ""
}
