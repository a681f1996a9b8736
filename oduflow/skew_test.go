package oduflow

import (
	"context"
	"testing"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/google/uuid"

	"github.com/oduflow/oduflow-go/oduflow/oduflowtest/fakeminion"
	"github.com/oduflow/oduflow-go/receipt"
)

// Clock skew between replicas (issue 17, item 2): two dispatchers share one claim directory, one of them
// with a wall clock 2 minutes ahead or behind (WithClock). Before the fix Status compared the writer's
// CreatedAt and DispatchedAt with the reader's clock: the replica ahead read a live request unknown (and
// accepted an Assert on it), the replica behind kept an abandoned one running for 2 more minutes.

const replicaSkew = 2 * time.Minute

func skewedBy(d time.Duration) func() time.Time { return func() time.Time { return time.Now().Add(d) } }

// skewTimers: a short launch window (the abandoned case ends quickly) and a status expiry shorter than
// the skew (so a replica ahead by the skew would read a live dispatched request expired).
func skewTimers() Timers {
	return Timers{ExecutionWait: 50 * time.Second, HardDeadline: 55 * time.Second, StatusExpiry: 60 * time.Second,
		LaunchGrace: 2 * time.Second, LeaseWait: 2 * time.Second, PollBudget: 16, CallTimeout: 2 * time.Second}
}

// TestSkewedReplicaLaunchWindow: a claim whose worker never takes its lock (a detached worker that exits
// at once). Within the launch window a replica 2 minutes ahead reads it running and refuses an Assert;
// after the window a replica 2 minutes behind reads it unknown (not running for 2 more minutes).
func TestSkewedReplicaLaunchWindow(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := startSim(t)
	m := e.addMinion()
	a := e.dispatcher(WithTimers(skewTimers()), WithDetachedWorkers("/bin/true"))
	ahead := e.dispatcher(WithTimers(skewTimers()), WithClock(skewedBy(replicaSkew)))
	behind := e.dispatcher(WithTimers(skewTimers()), WithClock(skewedBy(-replicaSkew)))
	req := uuid.NewString()
	if r := mustStart(t, a, receipt.ProfileConfigure, m.ID(), req); r.Status != receipt.StatusRunning {
		t.Fatalf("start: %+v", r)
	}
	if r, err := ahead.Status(ctx, m.ID(), req, receipt.ProfileConfigure); err != nil || r.Status != receipt.StatusRunning {
		t.Errorf("replica 2 min ahead, inside the launch window: %+v %v, want running", r, err)
	}
	_, err := ahead.Reconcile(ctx, m.ID(), req, Assert{Outcome: receipt.StatusFailed, Total: 1, Who: "op", Why: "skew"})
	if !errors.Is(err, ErrNotUnknown) {
		t.Errorf("replica 2 min ahead accepted an Assert on a launching claim: %v", err)
	}
	// the window is measured on the claim directory's host clock (real time here): the replica behind
	// must read unknown once it has passed, not 2 minutes later
	if !waitUntil(skewTimers().LaunchGrace+4*time.Second, func() bool {
		r, err := behind.Status(ctx, m.ID(), req, receipt.ProfileConfigure)
		return err == nil && r.Status == receipt.StatusUnknown
	}) {
		t.Errorf("replica 2 min behind: an abandoned claim not unknown after its launch window")
	}
	if e.runs() != 0 {
		t.Fatalf("%d run publications", e.runs())
	}
}

// TestSkewedReplicaDispatchWindow: a dispatched request whose worker holds its lock, the minion holding
// the run. A replica 2 minutes ahead (more than the 60 s status expiry) reads it running and refuses an
// Assert on it.
func TestSkewedReplicaDispatchWindow(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := startSim(t)
	m := e.addMinion(fakeminion.WithHold())
	defer m.Release()
	a := e.dispatcher(WithTimers(skewTimers()))
	ahead := e.dispatcher(WithTimers(skewTimers()), WithClock(skewedBy(replicaSkew)))
	req := uuid.NewString()
	mustStart(t, a, receipt.ProfileConfigure, m.ID(), req)
	if !waitUntil(10*time.Second, func() bool { return e.runs() > 0 }) {
		t.Fatal("never published")
	}
	if r, err := ahead.Status(ctx, m.ID(), req, receipt.ProfileConfigure); err != nil || r.Status != receipt.StatusRunning {
		t.Errorf("replica 2 min ahead, live dispatched request: %+v %v, want running", r, err)
	}
	_, err := ahead.Reconcile(ctx, m.ID(), req, Assert{Outcome: receipt.StatusFailed, Total: 1, Who: "op", Why: "skew"})
	if !errors.Is(err, ErrNotUnknown) {
		t.Errorf("replica 2 min ahead accepted an Assert on a live claim: %v", err)
	}
	if c := mustClaim(t, a, req); c.Phase.Final() {
		t.Fatalf("claim %s/%s", c.Phase, c.Status)
	}
}
