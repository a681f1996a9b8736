package oduflow

import (
	"context"
	"time"

	"github.com/oduflow/oduflow-go/internal/errmark"
	"github.com/oduflow/oduflow-go/oduflow/claims"
	"github.com/oduflow/oduflow-go/receipt"

	"github.com/cockroachdb/errors"

	"github.com/oduflow/oduflow-go/salt"
)

// Publisher is what the dispatcher needs from the wire client (*salt.Client implements it).
type Publisher interface {
	Publish(ctx context.Context, req salt.PublishRequest) (*salt.PublishResult, error)
}

// Read-only functions the dispatcher publishes (always to one minion, list target).
const (
	funRun          = "oduflow_job.run"
	funStatus       = "oduflow_job.status"
	funCapabilities = "oduflow_job.capabilities"
	funPing         = "test.ping"
	funFence        = "oduflow_job.fence"
	// funAttest (oduflow_job.attest) is declared with the receipt proofs.
)

// errCallGap: the event stream had a gap while a call waited for its return.
var errCallGap = errmark.Mark(errors.New("oduflow: event gap while waiting for a return"), errNoReturn)

// publishSlotted sends one publication to one minion, never retried, and counts it; kwargs (when not nil)
// go as Salt's trailing keyword-argument map. slotted (when not nil) runs once the publication has its
// publish slot, just before it is sent: the time a call's timeout starts from (queueing behind the bound
// is not the call).
func (d *Dispatcher) publishSlotted(ctx context.Context, minion string, fun string, args []any, kwargs map[string]any, jid salt.JID, slotted func()) (*salt.PublishResult, error) {
	return d.publishTo(ctx, salt.ListTarget(minion), fun, args, kwargs, jid, slotted)
}

// publishTo is publishSlotted to a list of minions (a read-only call shared by several workers: the
// capability checks, capbatch.go). oduflow_job.run is only ever published to its one minion.
func (d *Dispatcher) publishTo(ctx context.Context, target salt.Target, fun string, args []any, kwargs map[string]any, jid salt.JID, slotted func()) (*salt.PublishResult, error) {
	if fun == funRun && len(target.List) != 1 {
		return nil, errors.AssertionFailedf("oduflow: %s is published to its one minion only", errors.Safe(fun))
	}
	select { // bound the wire requests in flight (the master and this host have finite workers)
	case d.pubSem <- struct{}{}:
	case <-ctx.Done():
		return nil, errmark.Mark(errors.Wrap(ctx.Err(), "oduflow: waiting to publish"), salt.ErrNotSent)
	}
	defer func() { <-d.pubSem }()
	if slotted != nil {
		slotted()
	}
	t0 := time.Now()
	res, err := d.pub.Publish(ctx, salt.PublishRequest{
		Target:  target,
		Fun:     fun,
		Args:    args,
		Kwargs:  kwargs,
		JID:     jid,
		Timeout: publishTimeout,
	})
	d.hooks.observe(ctx, "publish", time.Since(t0))
	if err != nil {
		d.hooks.published(ctx, fun, string(publishErrorCode(err)))
		return nil, err
	}
	d.hooks.published(ctx, fun, "ok")
	d.hub.expectEvents(d.timers.busStall()) // the master fires salt/job/<jid>/new: silence is a stalled bus
	return res, nil
}

// publishErrorCode maps a publish error to its sanitized code.
func publishErrorCode(err error) claims.ErrorCode {
	switch {
	case salt.IsOutcomeUnknown(err):
		return claims.CodeOutcomeUnknown
	case errors.Is(err, salt.ErrAuthentication):
		return claims.CodeAuthentication
	case errors.Is(err, salt.ErrAuthorization):
		return claims.CodeAuthorization
	case errors.Is(err, salt.ErrNoMinions):
		return claims.CodeNoMinions
	case errors.Is(err, salt.ErrBadLoad):
		return claims.CodeBadLoad
	case errors.Is(err, salt.ErrMasterException):
		return claims.CodeMasterException
	case errors.Is(err, salt.ErrNotSent):
		return claims.CodeNotSent
	case salt.IsNotPublished(err):
		return claims.CodeRefused
	}
	return claims.CodeOutcomeUnknown
}

// callAttempts bounds how often a read-only call is published again after an event gap hid its return.
const callAttempts = 3

// call publishes a read-only function (never oduflow_job.run) to one minion and waits (at most timeout in
// all, counted from when its first publication leaves the publish queue) for its return. The event waiter
// is registered before each publish. When an event-bus gap may have hidden the return, the read-only call
// is asked again (new JID), at most callAttempts times in all.
func (d *Dispatcher) call(ctx context.Context, minion, fun string, args []any, timeout time.Duration) (*salt.JobReturn, error) {
	return d.callAccept(ctx, minion, fun, args, timeout, nil)
}

// callAccept is call; a return for which accept (when not nil) is false is skipped and the call keeps
// waiting. Returns that are not the minion's own (another minion's tag, cmd _minion_event, a data id
// that is not the tag's minion) are always skipped: a forged answer raced ahead of the real one cannot
// take its place.
func (d *Dispatcher) callAccept(ctx context.Context, minion, fun string, args []any, timeout time.Duration, accept func(*salt.JobReturn) bool) (*salt.JobReturn, error) {
	if fun == funRun {
		return nil, errors.AssertionFailedf("oduflow: call never publishes %s", errors.Safe(fun))
	}
	// Zero until the first publication has its publish slot: with thousands of workers queued behind the
	// publish bound (a burst of Starts), the wait for a slot is not part of the call's timeout.
	var deadline time.Time
	for attempt := 1; ; attempt++ {
		jr, err := d.callOnce(ctx, minion, fun, args, timeout, &deadline, accept)
		if err == nil || !errors.Is(err, errCallGap) || attempt >= callAttempts || time.Until(deadline) <= 0 {
			return jr, err
		}
	}
}

func (d *Dispatcher) callOnce(ctx context.Context, minion, fun string, args []any, timeout time.Duration, deadline *time.Time, accept func(*salt.JobReturn) bool) (*salt.JobReturn, error) {
	jid := d.jids.Next()
	left := timeout
	if !deadline.IsZero() {
		left = time.Until(*deadline)
	}
	wctx, cancel := context.WithTimeout(ctx, left) // bounds connecting to the event bus, if it must
	w, err := d.hub.watch(wctx, jid)
	cancel()
	if err != nil {
		return nil, err
	}
	defer w.close()
	if _, err := d.publishSlotted(ctx, minion, fun, args, nil, jid, func() {
		if deadline.IsZero() {
			*deadline = time.Now().Add(timeout)
		}
	}); err != nil {
		return nil, err
	}
	tm := time.NewTimer(time.Until(*deadline))
	defer tm.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-tm.C:
			return nil, errors.Wrapf(errNoReturn, "%s", errors.Safe(fun))
		case <-w.gaps:
			// Events may have been missed, this return among them: the caller decides whether to ask again.
			return nil, errors.Wrapf(errCallGap, "%s", errors.Safe(fun))
		case r := <-w.rets:
			if reason := eventReason(minion, r); reason != "" {
				d.hooks.unverifiedEvent(ctx, reason)
				continue
			}
			if accept != nil && !accept(r) {
				continue
			}
			return r, nil
		}
	}
}

// publicationSpec is what the worker publishes for one claim: the positional arguments of
// oduflow_job.run after request_id and profile (state_data_json).
type publicationSpec struct {
	StateDataJSON string
}

// publicationSource resolves a claim's publication spec. The default serves the fixed profiles (empty
// state data: the role is fixed on the minion by the profile) and refuses custom claims.
type publicationSource interface {
	Publication(ctx context.Context, c *claims.Claim) (publicationSpec, error)
}

type fixedPublications struct{}

func (fixedPublications) Publication(_ context.Context, c *claims.Claim) (publicationSpec, error) {
	if c.EffectiveProfile() == receipt.ProfileCustom {
		return publicationSpec{}, errors.New("oduflow: custom claims need a custom publication source")
	}
	return publicationSpec{}, nil
}
