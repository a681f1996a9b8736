package oduflow

import (
	"context"
	"log/slog"
	"time"

	"github.com/oduflow/oduflow-go/receipt"
	"github.com/oduflow/oduflow-go/salt"
)

// await waits until deadline for a trustworthy final receipt of c: the return of its JID on the event bus,
// or an oduflow_job.status poll on the expected minion (at once after every gap or untrustworthy return,
// and on a schedule spreading the poll budget over the window). It returns nil when the window or the
// budget is spent, or ctx ends.
func (d *Dispatcher) await(ctx context.Context, c *Claim, w *waiter, deadline time.Time) *receipt.Receipt {
	return d.awaitFrom(ctx, c, w, deadline, false)
}

// awaitFrom is await; with pollFirst the first status poll is made at once (a Resume asks now).
func (d *Dispatcher) awaitFrom(ctx context.Context, c *Claim, w *waiter, deadline time.Time, pollFirst bool) *receipt.Receipt {
	lg := d.claimLog(c)
	budget := d.timers.PollBudget
	interval := d.timers.PollInterval()
	window := time.NewTimer(time.Until(deadline))
	defer window.Stop()
	tick := time.NewTimer(interval)
	defer tick.Stop()
	pollNow := pollFirst
	unknownPolls := 0
	for {
		if pollNow {
			pollNow = false
			if budget <= 0 {
				lg.Warn("poll budget spent")
				return nil
			}
			budget--
			r := d.pollOnce(ctx, c, deadline)
			switch {
			case r != nil && r.Status.Terminal():
				return r
			case r != nil && r.Status == receipt.StatusUnknown:
				// The minion's record is partial or its worker is gone. Ask once more before believing it:
				// a poll can land between the minion's two claim writes.
				unknownPolls++
				if unknownPolls >= 2 {
					return r
				}
				pollNow = true
				continue
			default:
				unknownPolls = 0
			}
			if !tick.Stop() {
				select {
				case <-tick.C:
				default:
				}
			}
			tick.Reset(interval)
			continue
		}
		select {
		case <-ctx.Done():
			return nil
		case <-window.C:
			return nil
		case <-w.gaps:
			lg.Info("event gap; polling at once")
			pollNow = true
		case <-tick.C:
			pollNow = true
		case jr := <-w.rets:
			if r := d.trustworthy(c, jr); r != nil && final(r) {
				return r
			}
			lg.Warn("untrustworthy return ignored; polling")
			pollNow = true
		}
	}
}

// final: a run return that ends the wait (a terminal status, or the minion's own definitive unknown).
func final(r *receipt.Receipt) bool {
	return r.Status.Terminal() || r.Status == receipt.StatusUnknown
}

// trustworthy validates a return as a protocol-1 receipt bound to the claim and from the expected minion.
func (d *Dispatcher) trustworthy(c *Claim, jr *salt.JobReturn) *receipt.Receipt {
	if jr == nil || jr.MinionID != c.MinionID {
		return nil
	}
	r, err := receipt.FromValue(jr.Return)
	if err != nil {
		return nil
	}
	if err := c.Binding().Check(r); err != nil {
		d.claimLog(c).Warn("receipt binding mismatch ignored", slog.String("error", err.Error()))
		return nil
	}
	return &r
}

// pollOnce asks the expected minion for its receipt of c. A nil result means no trustworthy receipt.
func (d *Dispatcher) pollOnce(ctx context.Context, c *Claim, deadline time.Time) *receipt.Receipt {
	t0 := time.Now()
	defer func() { d.hooks.Observe("poll", time.Since(t0)) }()
	timeout := d.timers.CallTimeout
	if rem := time.Until(deadline); rem < timeout {
		timeout = rem
	}
	if timeout <= 0 {
		return nil
	}
	jr, err := d.call(ctx, c.MinionID, FunStatus, statusArgs(c), timeout)
	if err != nil {
		d.claimLog(c).Info("status poll without answer", slog.String("error", err.Error()))
		return nil
	}
	return d.trustworthy(c, jr)
}

func statusArgs(c *Claim) []any {
	return []any{c.RequestID, c.JID, string(c.EffectiveProfile())}
}

// capabilities calls oduflow_job.capabilities on the minion: protocol version and pillar readiness.
func (d *Dispatcher) capabilities(ctx context.Context, minion string) (int, bool, error) {
	timeout := d.timers.CallTimeout
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) < timeout {
		timeout = time.Until(dl)
	}
	jr, err := d.call(ctx, minion, FunCapabilities, nil, timeout)
	if err != nil {
		return 0, false, err
	}
	proto, ready := parseCapabilities(jr.Return)
	return proto, ready, nil
}

// parseCapabilities reads {"protocol": 1, "pillar_ready": true, ...} tolerantly; anything else is 0/false.
func parseCapabilities(v any) (int, bool) {
	m, ok := v.(map[string]any)
	if !ok {
		return 0, false
	}
	proto := 0
	switch p := m["protocol"].(type) {
	case int64:
		proto = int(p)
	case int:
		proto = p
	case uint64:
		proto = int(p)
	case float64:
		if p == float64(int(p)) {
			proto = int(p)
		}
	}
	ready, _ := m["pillar_ready"].(bool)
	return proto, ready
}
