package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/oduflow/oduflow-go/oduflow"
	"github.com/oduflow/oduflow-go/receipt"
)

func asJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return err.Error()
	}
	return string(b)
}

// follow reads the status every 50 ms until it is terminal (or unknown), at most 20 s.
func (dm *demo) follow(ctx context.Context, profile receipt.Profile, request string) (oduflow.Response, int, error) {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	reads := 0
	for {
		r, err := dm.d.Status(ctx, dm.minion, request, profile)
		if err != nil {
			return r, reads, err
		}
		reads++
		if r.Status.Terminal() || r.Status == receipt.StatusUnknown {
			return r, reads, nil
		}
		select {
		case <-ctx.Done():
			return r, reads, fmt.Errorf("demo: waiting for a terminal status: %w", ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// run starts one fixed-profile request and follows it to its end.
func (dm *demo) run(ctx context.Context, profile receipt.Profile, request string) (oduflow.Response, error) {
	r, err := dm.d.Start(ctx, dm.minion, request, profile)
	if err != nil {
		return r, err
	}
	dm.requests++
	dm.say("start %s -> %s, jid %s (preassigned and stored in the claim before publishing)", profile, r.Status, deref(r.JID))
	r, _, err = dm.follow(ctx, profile, request)
	if err != nil {
		return r, err
	}
	dm.say("status -> %s", asJSON(r))
	return r, nil
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func deref(s *string) string {
	if s == nil {
		return "null"
	}
	return *s
}

func expect(r oduflow.Response, st receipt.Status) error {
	if r.Status != st {
		return fmt.Errorf("demo: expected %s, got %s", st, r.Status)
	}
	return nil
}

func (dm *demo) ping(ctx context.Context) error {
	dm.step(1, "ping: is the exact minion known, reachable and running protocol 1?")
	r, err := dm.d.Ping(ctx, dm.minion)
	if err != nil {
		return err
	}
	dm.say("test.ping and oduflow_job.capabilities -> %s", asJSON(readiness(dm.minion, r)))
	if !r.Ready() {
		return errors.New("demo: the minion is not ready")
	}
	return nil
}

func (dm *demo) configure(ctx context.Context) error {
	dm.step(2, "configure: roles.client_stack, every state result true")
	dm.configureID = receipt.NewRequestID()
	r, err := dm.run(ctx, receipt.ProfileConfigure, dm.configureID)
	if err != nil {
		return err
	}
	dm.configureJID = deref(r.JID)
	return expect(r, receipt.StatusSucceeded)
}

func (dm *demo) production(ctx context.Context) error {
	dm.step(3, "production: roles.client_production, one state result false")
	r, err := dm.run(ctx, receipt.ProfileProduction, receipt.NewRequestID())
	if err != nil {
		return err
	}
	dm.say("failed with counts: %d of %d states passed; only status and counts leave the minion", r.Passed, r.Total)
	return expect(r, receipt.StatusFailed)
}

func (dm *demo) repeat(ctx context.Context) error {
	dm.step(4, "repeat: start configure again with the same request id")
	before := dm.sim.PublicationCount("oduflow_job.run", "")
	r, err := dm.d.Start(ctx, dm.minion, dm.configureID, receipt.ProfileConfigure)
	if err != nil {
		return err
	}
	after := dm.sim.PublicationCount("oduflow_job.run", "")
	dm.say("start configure %s -> %s, jid %s (step 2: %s)", dm.configureID, r.Status, deref(r.JID), dm.configureJID)
	dm.say("simulator: oduflow_job.run publications before %d, after %d: nothing was published again", before, after)
	if deref(r.JID) != dm.configureJID || after != before {
		return errors.New("demo: a repeated start published again")
	}
	return expect(r, receipt.StatusSucceeded)
}

func (dm *demo) lostReturn(ctx context.Context) error {
	dm.step(5, "lost return: the minion finishes, but its return never reaches the event bus")
	gate := make(chan struct{})
	dm.mu.Lock()
	dm.armed, dm.gate = true, gate
	dm.mu.Unlock()
	request := receipt.NewRequestID()
	polls := dm.sim.PublicationCount("oduflow_job.status", "")
	t := time.Now()
	r, err := dm.d.Start(ctx, dm.minion, request, receipt.ProfileConfigure)
	if err != nil {
		close(gate)
		return err
	}
	dm.requests++
	dm.sim.DropNextReturn(deref(r.JID))
	close(gate)
	dm.say("start configure -> %s, jid %s; the simulator will drop that job's return", r.Status, deref(r.JID))
	r, _, err = dm.follow(ctx, receipt.ProfileConfigure, request)
	if err != nil {
		return err
	}
	n := dm.sim.PublicationCount("oduflow_job.status", "") - polls
	dm.say("the worker polled oduflow_job.status on the minion (%d %s) and read its durable receipt after %.1fs",
		n, plural(n, "poll", "polls"), time.Since(t).Seconds())
	dm.say("status -> %s", asJSON(r))
	return expect(r, receipt.StatusSucceeded)
}
