package oduflow

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/oduflow/oduflow-go/oduflow/claims"
	"github.com/oduflow/oduflow-go/oduflow/oduflowtest/fakeminion"
	"github.com/oduflow/oduflow-go/receipt"
)

// A rolling restart of two replicas (file store, the simulator, fake minions) in the middle of 50
// requests spread over 10 clients: each replica is closed once with a short drain (as a SIGTERM with a
// grace period would) and replaced by a new one. A Start refused ErrClosed goes to the other replica, as
// a load balancer would send it. Afterwards every request is terminal: the published ones succeeded with
// one publication each (those cut mid-run were adopted); the ones the drain cut before their intent
// failed dispatcher_closed with nothing published, and the ones cut between their intent and the
// minion's start were fenced by their adopter and never ran (the driver retries both under new ids, as
// a caller must); every job ran exactly once, no run overlapped on a client, no client is quarantined, nothing is left unresolved.
func TestRollingRestartTwoReplicas(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("a rolling restart")
	}
	e := startSim(t)
	ctx := context.Background()
	minions := e.addMinions(10, fakeminion.WithDelay(400*time.Millisecond))
	var adoptions atomic.Int64
	hooks := Hooks{Observe: func(_ context.Context, _ RequestRef, op string, _ time.Duration) {
		if op == "adoption" {
			adoptions.Add(1)
		}
	}}
	newReplica := func() *Dispatcher { return e.dispatcher(WithAdoption(50*time.Millisecond), WithHooks(hooks)) }
	var mu sync.Mutex
	replicas := []*Dispatcher{newReplica(), newReplica()}
	type job struct{ minion, req string }
	var jobs []job
	start := func(i int, j job) {
		for k := i; ; k++ {
			mu.Lock()
			d := replicas[k%2]
			mu.Unlock()
			_, err := d.Start(ctx, j.minion, j.req, receipt.ProfileConfigure)
			if errors.Is(err, ErrClosed) {
				// a retry backoff while this replica restarts (what a caller does)
				time.Sleep(5 * time.Millisecond)
				continue
			}
			if err != nil {
				t.Fatal(err)
			}
			return
		}
	}
	restart := func(k int) {
		mu.Lock()
		old := replicas[k]
		mu.Unlock()
		dctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond) // the grace period
		defer cancel()
		_ = old.Close(dctx)
		mu.Lock()
		replicas[k] = newReplica()
		mu.Unlock()
	}
	for i := range 50 {
		j := job{minions[i%len(minions)].ID(), uuid.NewString()}
		jobs = append(jobs, j)
		start(i, j)
		switch i {
		case 17:
			restart(0)
		case 34:
			restart(1)
		}
		// Starts spread over the rolling restart, so some land on a closing replica
		time.Sleep(15 * time.Millisecond)
	}
	mu.Lock()
	d := replicas[0]
	mu.Unlock()
	succeeded := map[string]int{}
	retried := 0
	for len(jobs) > 0 {
		j := jobs[0]
		jobs = jobs[1:]
		r := waitFinal(t, d, receipt.ProfileConfigure, j.minion, j.req)
		c := mustClaim(t, d, j.req)
		pubs := e.sim.PublicationCount(funRun, c.JID)
		switch {
		case r.Status == receipt.StatusSucceeded && pubs == 1:
			succeeded[j.minion]++
		case r.Status == receipt.StatusFailed && (c.ErrorCode == claims.CodeDispatcherClosed && pubs == 0 ||
			c.ErrorCode == claims.CodeLeaseBusy && pubs == 0 || c.ErrorCode == claims.CodeNeverRan && pubs <= 1):
			// Cut before its intent (nothing published), refused at preflight because the client's lease
			// stayed busy past LeaseWait while an earlier request of it was adopted (nothing published),
			// or cut after its intent and before the minion started it (the adopter fenced it: it never
			// runs). Either way it did not run: a new request id.
			retried++
			nj := job{j.minion, uuid.NewString()}
			start(0, nj)
			jobs = append(jobs, nj)
		default:
			t.Fatalf("request %s: %+v (code %q, %d publications)", j.req, r, c.ErrorCode, pubs)
		}
	}
	e.quiesce()
	total := 0
	for _, m := range minions {
		if m.Runs() != succeeded[m.ID()] || m.MaxConcurrentRuns() > 1 {
			t.Fatalf("minion %s: %d runs (max %d at once), %d requests succeeded", m.ID(), m.Runs(),
				m.MaxConcurrentRuns(), succeeded[m.ID()])
		}
		total += m.Runs()
		if q, err := d.Quarantine(ctx, m.ID()); err != nil || len(q) != 0 {
			t.Fatalf("quarantine of %s: %+v %v", m.ID(), q, err)
		}
	}
	if total != 50 {
		t.Fatalf("%d jobs ran, want 50", total)
	}
	for u, err := range d.Unresolved(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		t.Errorf("left unresolved: %+v", u.Claim)
	}
	if adoptions.Load() == 0 {
		t.Fatal("no request was adopted: the restarts cut nothing mid-run")
	}
	t.Logf("50 jobs: %d adopted, %d cut before they ran and retried", adoptions.Load(), retried)
}
