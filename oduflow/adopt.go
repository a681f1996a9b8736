package oduflow

import (
	"context"
	"log/slog"
	"time"

	"github.com/oduflow/oduflow-go/oduflow/claims"
	"github.com/oduflow/oduflow-go/receipt"
	"github.com/oduflow/oduflow-go/salt"
)

// adoptionConfig is WithAdoption and WithMaxAdoptions.
type adoptionConfig struct {
	on    bool
	every time.Duration
	max   int
}

// defaultMaxAdoptions bounds the adoptions one Dispatcher runs at a time (WithMaxAdoptions).
const defaultMaxAdoptions = 16

// adoptLeaseWait bounds an adopter's wait for the client lease: a busy lease means a new request of the
// client is in its preflight (which refuses it: the adopted request reads unknown until it is adopted);
// the adopter tries again next round instead of keeping the request lock meanwhile.
const adoptLeaseWait = time.Second

// adoptRecheck is how often a worker whose client waits for an adoption looks again (leaseAndClear).
const adoptRecheck = 25 * time.Millisecond

// WithAdoption makes the Dispatcher adopt requests whose worker is gone (a replica closed or killed
// mid-run, a killed detached worker): at New and then every interval (<= 0: Timers.PollInterval()),
// it lists the unresolved requests of every client (the store must implement UnresolvedScanner, as
// filestore.Store and etcdstore.Store do) and, for each one whose request lock is free, takes the lock
// and, for a dispatched request, the client lease, and polls it through the minion's signed receipt until
// it is final (docs/ARCHITECTURE.md, Lifecycle). It never publishes a request and never creates one.
// Off by default: a short-lived tool should not adopt; a service should.
func WithAdoption(every time.Duration) Option {
	return func(c *config) { c.adoption.on, c.adoption.every = true, every }
}

// WithMaxAdoptions bounds the adoptions in flight in this Dispatcher (default 16); the rest wait for the
// next round.
func WithMaxAdoptions(n int) Option { return func(c *config) { c.adoption.max = n } }

// startAdoption starts the adoption loop (WithAdoption).
func (d *Dispatcher) startAdoption() {
	if !d.adoption.on {
		return
	}
	if d.adoption.every <= 0 {
		d.adoption.every = d.timers.PollInterval()
	}
	if d.adoption.max <= 0 {
		d.adoption.max = defaultMaxAdoptions
	}
	d.adoptSem = make(chan struct{}, d.adoption.max)
	d.wg.Add(1)
	go d.adoptLoop()
}

// adoptLoop runs an adoption round at once and then every interval, until Close begins.
func (d *Dispatcher) adoptLoop() {
	defer d.wg.Done()
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-d.draining:
			return
		case <-d.ctx.Done():
			return
		case <-t.C:
		case <-d.adoptNow:
			if !t.Stop() {
				select {
				case <-t.C:
				default:
				}
			}
		}
		d.adoptRound(d.ctx)
		t.Reset(d.adoption.every)
	}
}

// kickAdoption asks the adoption loop for a round now (a worker waits for its client's orphan).
func (d *Dispatcher) kickAdoption() {
	select {
	case d.adoptNow <- struct{}{}:
	default:
	}
}

// adoptRound starts the adoption of every unresolved request that reads unknown (its worker is gone),
// at most WithMaxAdoptions at a time. It returns the number started.
func (d *Dispatcher) adoptRound(ctx context.Context) int {
	started := 0
	for c, err := range d.scanUnresolved(ctx) {
		if err != nil {
			d.log.Warn("adoption: unresolved requests unreadable; next round", slog.String("error", err.Error()))
			return started
		}
		if !d.adoptable(ctx, c) {
			continue
		}
		select {
		case d.adoptSem <- struct{}{}:
		case <-d.draining:
			return started
		case <-ctx.Done():
			return started
		}
		if d.admitNew(func() error { d.wg.Add(1); return nil }) != nil {
			<-d.adoptSem
			return started
		}
		started++
		go func() {
			defer d.wg.Done()
			defer func() { <-d.adoptSem }()
			d.adopt(ctx, c)
		}()
	}
	return started
}

// adoptable: c is unresolved, a protocol-1 claim, and reads unknown (no worker holds its lock: a
// dispatched one at once, one never dispatched after its launch grace), and, dispatched, its polling
// window is still open; a final unknown only when its worker would still be listening
// (publish_outcome_unknown). Without the lock held the answer can change; adopt checks again under it.
func (d *Dispatcher) adoptable(ctx context.Context, c *claims.Claim) bool {
	if !unresolved(c) || c.Legacy() {
		return false
	}
	if c.WasDispatched() {
		if _, open := d.resumeWindow(c); !open {
			return false // its window is over: an operator's Reconcile or Resume
		}
	} else if c.Phase != claims.PhaseClaimed {
		return false
	}
	if c.Phase.Final() {
		// Final unknown: only after an outcome-unknown publish does its worker go on listening; gone, it
		// is adopted (adopt sees a worker still holding the lock). Any other unknown is its worker's own
		// last word (window spent, the minion's own unknown): an operator's Resume or Reconcile.
		return c.ErrorCode == claims.CodeOutcomeUnknown
	}
	lv, err := d.liveness(ctx, c)
	return err == nil && !lv.RequestLockHeld && (c.WasDispatched() || !lv.LaunchOpen)
}

// launchOver: c's launch window (measured by the store) has closed: a claim never dispatched whose lock
// is free reads unknown.
func (d *Dispatcher) launchOver(ctx context.Context, c *claims.Claim) bool {
	lv, err := d.liveness(ctx, c)
	return err == nil && !lv.LaunchOpen
}

// adopt takes over one request whose worker is gone, under its request lock:
//   - never dispatched (phase claimed, past its launch grace): committed unknown (worker_lost), as its
//     own worker would if it started now; an adopter never publishes (docs/ARCHITECTURE.md, Lifecycle);
//   - dispatched: with the client lease too (as its worker held it), the minion is asked at once; a
//     not_started answer makes the adopter fence the publication (oduflow_job.fence) and record the
//     minion's signed "never ran"; otherwise the adopter waits for the run's verified receipt as the
//     worker would (the return on the event bus, polls on the schedule) until the window ends.
func (d *Dispatcher) adopt(ctx context.Context, c *claims.Claim) {
	lk, err := d.leases.TryRequestLock(ctx, c.RequestID)
	if err != nil {
		return // busy: a worker, a Resume or another adopter has it
	}
	defer func() { _ = lk.Release() }()
	cur, err := d.store.Get(ctx, c.RequestID)
	if err != nil || !unresolved(cur) || cur.Legacy() {
		return
	}
	ctx = withRequest(ctx, refOf(cur))
	lg := d.claimLog(cur)
	if !cur.WasDispatched() {
		if cur.Phase == claims.PhaseClaimed && d.launchOver(ctx, cur) {
			lg.Warn("adoption: the worker of a request never dispatched is gone; not publishing it")
			d.finalize(ctx, cur, receipt.StatusUnknown, 0, 0, claims.CodeWorkerLost, evidenceNone)
		}
		return
	}
	deadline, open := d.resumeWindow(cur)
	if !open || (cur.Phase.Final() && cur.ErrorCode != claims.CodeOutcomeUnknown) {
		return
	}
	lease, err := d.leases.AcquireClientLease(ctx, cur.MinionID, adoptLeaseWait)
	if err != nil {
		return // another request of the client holds it; next round
	}
	defer func() { _ = lease.Release() }()
	t0 := time.Now()
	lg.Info("adoption: polling a request whose worker is gone", slog.String("phase", string(cur.Phase)))
	w, err := d.hub.watch(ctx, salt.JID(cur.JID)) // a late return of the run counts too
	if err != nil {
		lg.Warn("adoption: event bus unavailable; next round", slog.String("error", err.Error()))
		return
	}
	defer w.close()
	r := d.pollOnce(ctx, cur, deadline)
	if r != nil && r.Status == receipt.StatusNotStarted {
		// Not started yet is not "never": the old worker may only be paused. Fence the publication; the
		// minion's signed answer afterwards is final (fenced: it never runs) or the run's own.
		if f := d.fence(ctx, cur); f != nil && f.Fenced() {
			if _, err := d.commitNeverRan(ctx, cur, f); err == nil {
				d.hooks.observe(ctx, "adoption", time.Since(t0))
			}
			return
		} else if f != nil {
			r = f
		}
	}
	if r == nil || !final(r) {
		r = d.awaitFrom(ctx, cur, w, deadline, false)
	}
	if ctx.Err() != nil {
		return // closed: the lock is released, another adopter goes on
	}
	d.settleAdopted(ctx, cur, r)
	d.hooks.observe(ctx, "adoption", time.Since(t0))
}

// settleAdopted commits what an adopter's wait returned over the unresolved claim c, as its worker would:
// nil (window or budget spent) is unknown; a verified final receipt is committed (evidence receipt) over
// a non-final claim, and replaces a recorded unknown only when terminal.
func (d *Dispatcher) settleAdopted(ctx context.Context, c *claims.Claim, r *receipt.Receipt) {
	switch {
	case r == nil:
		if !c.Phase.Final() {
			d.finalize(ctx, c, receipt.StatusUnknown, 0, 0, claims.CodeNoTrustworthyReturn, evidenceNone)
		}
	case c.Phase.Final():
		if r.Status.Terminal() {
			_ = d.replaceUnknown(ctx, c, r, "adoption")
		}
	default:
		d.finalize(ctx, c, r.Status, r.Passed, r.Total, receiptCode(r), evidenceReceipt)
	}
}
