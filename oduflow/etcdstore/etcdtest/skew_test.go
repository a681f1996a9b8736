package etcdtest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/oduflow/oduflow-go/internal/testwait"
	"github.com/oduflow/oduflow-go/oduflow"
	"github.com/oduflow/oduflow-go/receipt"
)

// Clock skew between replicas (issue 17, item 2), on etcd: replicas on their own Stores sharing one
// prefix, one with a wall clock 2 minutes ahead or behind (oduflow.WithClock). Before the fix Status
// compared the writer's CreatedAt and DispatchedAt with the reader's clock: the replica ahead read a live
// request unknown (and accepted an Assert on it), the replica behind kept an abandoned one running for
// 2 more minutes. Now the launch and dispatch windows are keys on etcd leases the cluster expires.

const replicaSkew = 2 * time.Minute

func skewedBy(d time.Duration) func() time.Time { return func() time.Time { return time.Now().Add(d) } }

// skewTimers: a short launch window and a status expiry shorter than the skew.
func skewTimers() oduflow.Timers {
	return oduflow.Timers{ExecutionWait: 50 * time.Second, HardDeadline: 55 * time.Second, StatusExpiry: 60 * time.Second,
		LaunchGrace: 3 * time.Second, LeaseWait: 5 * time.Second, PollBudget: 1, CallTimeout: 2 * time.Second}
}

var skewAssert = oduflow.Assert{Outcome: receipt.StatusFailed, Total: 1, Who: "op", Why: "skew"}

// TestSkewedReplicaLaunchWindow: a claim whose worker never takes its lock (a detached worker that exits
// at once). Within the launch window a replica 2 minutes ahead reads it running and refuses an Assert;
// after the window (+ its lease's rounding) a replica 2 minutes behind reads it unknown.
func TestSkewedReplicaLaunchWindow(t *testing.T) {
	ctx := context.Background()
	st := newStores(t, 3, windowsOf(skewTimers()))
	m := &fakeMaster{runs: make(map[string]int)}
	minion, req := newMinion(), receipt.NewRequestID()
	a := fakeDispatcher(t, st[0], m, minion, oduflow.WithTimers(skewTimers()), oduflow.WithDetachedWorkers("/bin/true"))
	ahead := fakeDispatcher(t, st[1], m, minion, oduflow.WithTimers(skewTimers()), oduflow.WithClock(skewedBy(replicaSkew)))
	behind := fakeDispatcher(t, st[2], m, minion, oduflow.WithTimers(skewTimers()), oduflow.WithClock(skewedBy(-replicaSkew)))
	if r, err := a.Start(ctx, minion, req, receipt.ProfileConfigure); err != nil || r.Status != receipt.StatusRunning {
		t.Fatalf("start: %+v %v", r, err)
	}
	if r, err := ahead.Status(ctx, minion, req, receipt.ProfileConfigure); err != nil || r.Status != receipt.StatusRunning {
		t.Errorf("replica 2 min ahead, inside the launch window: %+v %v, want running", r, err)
	}
	if _, err := ahead.Reconcile(ctx, minion, req, skewAssert); !errors.Is(err, oduflow.ErrNotUnknown) {
		t.Errorf("replica 2 min ahead accepted an Assert on a launching claim: %v", err)
	}
	// The window lasts LaunchGrace rounded up to seconds plus at most 2 s (its shared lease).
	testwait.Until(t, "replica 2 min behind: an abandoned claim not unknown after its launch window",
		skewTimers().LaunchGrace+4*time.Second, func() bool {
			r, err := behind.Status(ctx, minion, req, receipt.ProfileConfigure)
			if err != nil {
				t.Fatal(err)
			}
			return r.Status == receipt.StatusUnknown
		})
	if n := m.runsOf(req); n != 0 {
		t.Fatalf("%d run publications", n)
	}
}

// TestSkewedReplicaDispatchWindow: a dispatched request whose worker holds its lock (the fake master
// never returns the run). A replica 2 minutes ahead (more than the 60 s status expiry) reads it running
// and refuses an Assert on it.
func TestSkewedReplicaDispatchWindow(t *testing.T) {
	ctx := context.Background()
	st := newStores(t, 2, windowsOf(skewTimers()))
	m := &fakeMaster{runs: make(map[string]int)}
	minion, req := newMinion(), receipt.NewRequestID()
	a := fakeDispatcher(t, st[0], m, minion, oduflow.WithTimers(skewTimers()))
	ahead := fakeDispatcher(t, st[1], m, minion, oduflow.WithTimers(skewTimers()), oduflow.WithClock(skewedBy(replicaSkew)))
	if _, err := a.Start(ctx, minion, req, receipt.ProfileConfigure); err != nil {
		t.Fatal(err)
	}
	waitRuns(t, m, req, 1)
	if r, err := ahead.Status(ctx, minion, req, receipt.ProfileConfigure); err != nil || r.Status != receipt.StatusRunning {
		t.Errorf("replica 2 min ahead, live dispatched request: %+v %v, want running", r, err)
	}
	if _, err := ahead.Reconcile(ctx, minion, req, skewAssert); !errors.Is(err, oduflow.ErrNotUnknown) {
		t.Errorf("replica 2 min ahead accepted an Assert on a live claim: %v", err)
	}
}
