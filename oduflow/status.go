package oduflow

import (
	"context"
	"fmt"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/oduflow/oduflow-go/internal/errmark"
	"github.com/oduflow/oduflow-go/oduflow/claims"
	"github.com/oduflow/oduflow-go/receipt"
)

// Response is the answer of every Start/Status (and Reconcile/Resume): the response contract of the package doc.
type Response struct {
	MinionID  string         `json:"minion_id"`
	RequestID string         `json:"request_id"`
	JID       *string        `json:"jid"` // nil for not_started
	Status    receipt.Status `json:"status"`
	Passed    int            `json:"passed"`
	Total     int            `json:"total"`
	// ErrorCode is the sanitized reason the claim records (one of the Code* constants, e.g.
	// CodeQuarantined, CodeNoMinions, CodeMinionRefused), "" when none: a succeeded request, a
	// running one, not_started. Always present in JSON (an empty string, never omitted), so that a
	// client reads one schema.
	ErrorCode claims.ErrorCode `json:"error_code"`
}

// String is the response on one line, with the JID's value (JID is a pointer, so %v of the struct would
// print an address): "client-… 0d1c… jid=20261207011500123456 succeeded 3/3", plus "error_code=…" when
// there is one and "jid=null" before a JID exists.
func (r Response) String() string {
	jid := "null"
	if r.JID != nil {
		jid = *r.JID
	}
	s := fmt.Sprintf("%s %s jid=%s %s %d/%d", r.MinionID, r.RequestID, jid, r.Status, r.Passed, r.Total)
	if r.ErrorCode != "" {
		s += " error_code=" + string(r.ErrorCode)
	}
	return s
}

func notStarted(t target) Response {
	return Response{MinionID: t.minion, RequestID: t.request, Status: receipt.StatusNotStarted}
}

// Status reports the request's status under the response contract.
func (d *Dispatcher) Status(ctx context.Context, minion, request string, profile receipt.Profile) (_ Response, err error) {
	defer errmark.Boundary(&err)
	t0 := time.Now()
	defer func() { d.hooks.observe(ctx, "status", time.Since(t0)) }()
	t, err := d.parseTarget(minion, request)
	if err != nil {
		return Response{}, err
	}
	if err := d.validateProfile(profile); err != nil {
		return Response{}, err
	}
	ctx = withRequest(ctx, RequestRef{Minion: t.minion, RequestID: t.request, Profile: profile})
	c, lv, err := d.readForStatus(ctx, t.request)
	if err != nil {
		if errors.Is(err, claims.ErrNoClaim) {
			return notStarted(t), nil
		}
		return Response{}, err
	}
	if err := checkBinding(c, profile, t.minion); err != nil {
		return Response{}, err
	}
	return responseFor(c, statusOf(c, lv)), nil
}

func (d *Dispatcher) respond(ctx context.Context, c *claims.Claim) (Response, error) {
	c, st, err := d.computeStatus(ctx, c)
	if err != nil {
		return Response{}, err
	}
	return responseFor(c, st), nil
}

func responseFor(c *claims.Claim, st receipt.Status) Response {
	r := Response{MinionID: c.MinionID, RequestID: c.RequestID, Status: st}
	if c.JID != "" {
		j := c.JID
		r.JID = &j
	}
	if c.Phase.Final() {
		r.Passed, r.Total = c.Passed, c.Total
	}
	if st == receipt.StatusFailed || st == receipt.StatusUnknown || c.Phase.Final() {
		r.ErrorCode = c.ErrorCode
	}
	return r
}

// computeStatus applies the status contract to a claim read earlier (see statusOf) and returns the claim
// the status belongs to. The claim and its liveness are two reads: a worker can commit its final status
// and let go of its lock between them, and the stale claim with a free lock would read unknown for a
// request that has just ended. So a lock found free is followed by a second read of the claim: the
// worker commits before it releases, hence a commit made before the release is seen (settleRead).
func (d *Dispatcher) computeStatus(ctx context.Context, c *claims.Claim) (*claims.Claim, receipt.Status, error) {
	if c.Phase.Final() {
		return c, c.Status, nil
	}
	lv, err := d.liveness(ctx, c)
	if err != nil {
		return nil, "", err
	}
	return d.settleRead(ctx, c, lv)
}

// settleRead is statusOf for a claim and a liveness read after it, with the claim read again when the
// lock was found free and the answer would not be running: had the worker committed in between, the
// committed claim answers.
func (d *Dispatcher) settleRead(ctx context.Context, c *claims.Claim, lv claims.Liveness) (*claims.Claim, receipt.Status, error) {
	st := statusOf(c, lv)
	if lv.RequestLockHeld || st == receipt.StatusRunning {
		return c, st, nil
	}
	cur, err := d.store.Get(ctx, c.RequestID)
	if err != nil {
		return nil, "", err
	}
	if cur.Phase.Final() {
		return cur, cur.Status, nil
	}
	return c, st, nil
}

// statusOf is the status contract, for a claim and its liveness read at one instant:
//   - final (terminal/asserted): its recorded status;
//   - the dispatch window (Timers.StatusExpiry from the intent) ran out: unknown, even if a worker holds
//     the lock;
//   - request lock held: running;
//   - lock free and dispatched (the intent was recorded): unknown (the worker is gone);
//   - lock free, never dispatched: running while the launch window (Timers.LaunchGrace from creation)
//     is open, unknown (worker disappeared) after it.
//
// Both windows are measured by the store (WindowedStore), never by comparing this replica's clock with
// a time another replica wrote.
func statusOf(c *claims.Claim, lv claims.Liveness) receipt.Status {
	switch {
	case c.Phase.Final():
		return c.Status
	case c.DispatchedAt != nil && !lv.DispatchOpen:
		return receipt.StatusUnknown
	case lv.RequestLockHeld:
		return receipt.StatusRunning
	case c.WasDispatched():
		// Its worker took the request lock before recording the intent and holds it until the result is
		// committed: a free lock means the worker is gone (closed, killed, lease expired), however
		// recently the request was created.
		return receipt.StatusUnknown
	case lv.LaunchOpen:
		return receipt.StatusRunning
	}
	return receipt.StatusUnknown
}

// liveness reads c's request lock and windows: from the store when it measures the windows itself,
// else (a ClaimStore without them) with this dispatcher's clock against the claim's timestamps.
func (d *Dispatcher) liveness(ctx context.Context, c *claims.Claim) (claims.Liveness, error) {
	if d.windows != nil {
		return d.windows.Liveness(ctx, c)
	}
	held, err := d.leases.RequestLockHeld(ctx, c.RequestID)
	if err != nil {
		return claims.Liveness{}, err
	}
	return d.clockLiveness(c, held), nil
}

// clockLiveness measures the windows with this dispatcher's clock: only for a store that does not
// measure them itself (its replicas' clocks must then agree within a fraction of the launch grace).
func (d *Dispatcher) clockLiveness(c *claims.Claim, held bool) claims.Liveness {
	now := d.clock.Now()
	lv := claims.Liveness{RequestLockHeld: held, LaunchOpen: now.Sub(c.CreatedAt) <= d.timers.LaunchGrace}
	if c.DispatchedAt != nil {
		lv.DispatchOpen = now.Sub(*c.DispatchedAt) <= d.timers.StatusExpiry
	}
	return lv
}

// readForStatus reads the claim and its liveness, at one instant when the store can.
func (d *Dispatcher) readForStatus(ctx context.Context, request string) (*claims.Claim, claims.Liveness, error) {
	var (
		c   *claims.Claim
		lv  claims.Liveness
		err error
	)
	switch {
	case d.windows != nil:
		c, lv, err = d.windows.GetWithLiveness(ctx, request)
	case d.claimLock != nil:
		var held bool
		if c, held, err = d.claimLock.GetWithRequestLock(ctx, request); err == nil {
			lv = d.clockLiveness(c, held)
		}
	default:
		if c, err = d.store.Get(ctx, request); err == nil && !c.Phase.Final() {
			lv, err = d.liveness(ctx, c)
		}
	}
	if err != nil {
		return nil, claims.Liveness{}, err
	}
	if c.Phase.Final() {
		return c, claims.Liveness{}, nil
	}
	// A store may read the claim and its lock one after the other (the file store does): settle a free
	// lock against a second read of the claim.
	cur, _, err := d.settleRead(ctx, c, lv)
	if err != nil {
		return nil, claims.Liveness{}, err
	}
	if cur != c {
		return cur, claims.Liveness{}, nil // committed meanwhile: final, its liveness no longer matters
	}
	return c, lv, nil
}
