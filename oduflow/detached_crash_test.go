package oduflow

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/oduflow/oduflow-go/oduflow/claims"
	"github.com/oduflow/oduflow-go/receipt"
)

// A detached worker process is SIGKILLed at each step; afterwards Status is right and no second
// publication ever happens.
func TestCrashConsistencyDetachedWorker(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("spawns processes")
	}
	type want struct {
		status     receipt.Status
		runs       int
		quarantine bool
		resumable  bool // a minion receipt exists: Resume recovers it
	}
	cases := []struct {
		name     string
		pauseAt  string
		inflight bool // let the publish go out, hold its reply, kill before the reply
		want     want
	}{
		{"after claim", stepClaimed, false, want{receipt.StatusUnknown, 0, false, false}},
		{"after lease", stepLease, false, want{receipt.StatusUnknown, 0, false, false}},
		{"after dispatch record", stepDispatchRecorded, false, want{receipt.StatusUnknown, 0, true, false}},
		{"publish sent before reply", stepDispatchRecorded, true, want{receipt.StatusUnknown, 1, true, true}},
		{"after reply", stepPublishReplied, false, want{receipt.StatusUnknown, 1, true, true}},
		{"after return", stepReturned, false, want{receipt.StatusUnknown, 1, true, true}},
		{"after commit", stepCommitted, false, want{receipt.StatusSucceeded, 1, false, false}},
	}
	for round := 0; round < 2; round++ {
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				e := startSim(t)
				m := e.addMinion()
				stepFile := filepath.Join(t.TempDir(), "steps")
				exe, err := os.Executable()
				if err != nil {
					t.Fatal(err)
				}
				clk := newFakeClock()
				tm := testTimers()
				tm.StatusExpiry = defaultStatusExpiry
				env := childEnv(e, envStepFile+"="+stepFile, envPauseAt+"="+tc.pauseAt)[len(os.Environ()):]
				d := e.dispatcher(WithDetachedWorkers(exe, env...), withClock(clk), WithTimers(tm))
				ctx := context.Background()
				req := uuid.NewString()
				first := mustStart(t, d, receipt.ProfileConfigure, m.ID(), req)

				pid := waitStep(t, stepFile, tc.pauseAt)
				if tc.inflight {
					e.sim.DelayNextReply("publish", 20*time.Second)
					if err := os.WriteFile(stepFile+".go", nil, 0o600); err != nil {
						t.Fatal(err)
					}
					waitRuns(t, e, 1)
					if !waitUntil(5*time.Second, func() bool { return m.Runs() > 0 }) {
						t.Fatal("the minion never started the publication")
					}
				}
				if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
					t.Fatal(err)
				}
				waitLockFree(t, d, req)
				if st := status(t, d, mustClaim(t, d, req)); st != receipt.StatusRunning && st != tc.want.status {
					t.Fatalf("within grace: %s", st)
				}
				advanceWindows(d, clk, defaultLaunchGrace+time.Second)
				got, err := d.Status(ctx, m.ID(), req, receipt.ProfileConfigure)
				if err != nil || got.Status != tc.want.status || *got.JID != *first.JID {
					t.Fatalf("status after kill: %+v %v", got, err)
				}
				c := mustClaim(t, d, req)
				if c.Quarantining() != tc.want.quarantine {
					t.Fatalf("quarantine %v: %+v", c.Quarantining(), c)
				}
				// Repeated Start never publishes again.
				again := mustStart(t, d, receipt.ProfileConfigure, m.ID(), req)
				if again.Status != tc.want.status || *again.JID != *first.JID {
					t.Fatalf("repeat: %+v", again)
				}
				if tc.want.resumable {
					// A detached Resume: a worker process polls; it returns once that worker holds the lock.
					if _, err := d.Resume(ctx, m.ID(), req); err != nil {
						t.Fatal(err)
					}
					waitClaim(t, d, req, "resolved by the resumed worker", func(c *claims.Claim) bool {
						return c.Phase.Final() && c.Status == receipt.StatusSucceeded
					})
					if r, _ := d.Status(ctx, m.ID(), req, receipt.ProfileConfigure); r.Status != receipt.StatusSucceeded {
						t.Fatalf("after resume: %+v", r)
					}
				} else if tc.want.quarantine {
					// The minion never started it: Reconcile fences the publication and records "never ran".
					r, err := d.Reconcile(ctx, m.ID(), req, FromMinion{})
					if err != nil || r.Status != receipt.StatusFailed {
						t.Fatalf("reconcile of a publication never started: %+v %v", r, err)
					}
					if c := mustClaim(t, d, req); c.ErrorCode != claims.CodeNeverRan || c.Quarantining() {
						t.Fatalf("never ran: %+v", c)
					}
				}
				e.quiesce() // in-process workers gone; the killed one released its lock, a resumed one committed final
				if e.runs() != tc.want.runs || m.Runs() != tc.want.runs {
					t.Fatalf("runs: sim %d minion %d, want %d", e.runs(), m.Runs(), tc.want.runs)
				}
			})
		}
	}
}

func waitStep(t *testing.T, stepFile, step string) int {
	t.Helper()
	var pid int
	if !waitUntil(20*time.Second, func() bool {
		var steps []string
		steps, pid = readSteps(stepFile)
		return slices.Contains(steps, step)
	}) {
		steps, _ := readSteps(stepFile)
		t.Fatalf("worker never reached %s (steps %v)", step, steps)
	}
	return pid
}

func waitLockFree(t *testing.T, d *Dispatcher, req string) {
	t.Helper()
	if !waitUntil(10*time.Second, func() bool {
		held, err := d.leases.RequestLockHeld(context.Background(), req)
		return err == nil && !held
	}) {
		t.Fatal("request lock still held after kill")
	}
}
