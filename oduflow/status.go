package oduflow

import (
	"context"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/oduflow/oduflow-go/internal/errmark"
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
	// ErrorCode is the sanitized reason the claim records (one of the codes in the package doc's table,
	// e.g. "quarantined", "publish_no_minions", "minion_refused"), "" when none: a succeeded request, a
	// running one, not_started. Always present in JSON (an empty string, never omitted), so that a
	// client reads one schema.
	ErrorCode string `json:"error_code"`
}

func notStarted(t target) Response {
	return Response{MinionID: t.minion, RequestID: t.request, Status: receipt.StatusNotStarted}
}

// Status reports the request's status under the response contract.
func (d *Dispatcher) Status(ctx context.Context, minion, request string, profile receipt.Profile) (_ Response, err error) {
	defer errmark.Boundary(&err)
	t0 := time.Now()
	defer func() { d.hooks.observe("status", time.Since(t0)) }()
	t, err := parseTarget(minion, request)
	if err != nil {
		return Response{}, err
	}
	if err := validateProfile(profile); err != nil {
		return Response{}, err
	}
	c, held, err := d.readForStatus(ctx, t.request)
	if err != nil {
		if errors.Is(err, ErrNoClaim) {
			return notStarted(t), nil
		}
		return Response{}, err
	}
	if err := checkBinding(c, profile, t.minion); err != nil {
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
	if st == receipt.StatusFailed || st == receipt.StatusUnknown || c.Phase.Final() {
		r.ErrorCode = c.ErrorCode
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

// readForStatus reads the claim and, when the store reads both at once, whether its request lock is
// held (nil: not read yet).
func (d *Dispatcher) readForStatus(ctx context.Context, request string) (*Claim, *bool, error) {
	if d.claimLock == nil {
		c, err := d.store.Get(ctx, request)
		return c, nil, err
	}
	c, held, err := d.claimLock.GetWithRequestLock(ctx, request)
	return c, &held, err
}
