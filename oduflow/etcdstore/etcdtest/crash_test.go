package etcdtest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/oduflow/oduflow-go/internal/testwait"
	"github.com/oduflow/oduflow-go/oduflow"
	"github.com/oduflow/oduflow-go/oduflow/claims"
	"github.com/oduflow/oduflow-go/oduflow/etcdstore"
	"github.com/oduflow/oduflow-go/receipt"
	"github.com/oduflow/oduflow-go/salt"
	"github.com/oduflow/oduflow-go/salt/salttest"
)

// crashChildEnv turns the re-executed test binary into a dispatcher process that SIGKILLs itself at one
// worker step (see runCrashChild).
const crashChildEnv = "ETCDTEST_CRASH_CHILD"

// crashTTL is the TTL of the etcd sessions of the crash tests' stores; crashTimers is short enough that a
// dead dispatcher's claim turns unknown within seconds.
const crashTTL = 2 * time.Second

func crashTimers() oduflow.Timers {
	return oduflow.Timers{ExecutionWait: 8 * time.Second, HardDeadline: 9 * time.Second, StatusExpiry: 10 * time.Second,
		LaunchGrace: 3 * time.Second, LeaseWait: 2 * time.Second, PollBudget: 16, CallTimeout: 2 * time.Second}
}

type crashJob struct {
	Claims, Master, Events, KeyFile, PKIDir, Minion, Request, KillAt string
}

func openCrashStore(ctx context.Context, claimsURL string) (*etcdstore.Store, error) {
	opts, err := etcdstore.ParseURL(claimsURL)
	if err != nil {
		return nil, err
	}
	return etcdstore.Open(ctx, append(opts, etcdstore.WithTTL(crashTTL), windowsOf(crashTimers()))...)
}

// windowsOf builds a store with the status windows of t: oduflow.New refuses a store whose windows are
// not its Timers'.
func windowsOf(t oduflow.Timers) etcdstore.Option {
	return etcdstore.WithStatusWindows(t.LaunchGrace, t.StatusExpiry)
}

func quietLog() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// newSaltDispatcher builds an in-process Dispatcher on st talking to the master at addr (whose accepted
// minion keys are in pkiDir).
func newSaltDispatcher(master, events, keyFile, pkiDir string, st *etcdstore.Store, opts ...oduflow.Option) (*oduflow.Dispatcher, error) {
	cli, err := salt.NewClient(master, salt.WithAuth(salt.UserKey("root", keyFile)))
	if err != nil {
		return nil, err
	}
	return oduflow.New(cli, oduflow.SaltEvents(events), append([]oduflow.Option{oduflow.WithClaimStore(st),
		oduflow.WithTimers(crashTimers()), oduflow.WithLogger(quietLog()), oduflow.WithPKIDir(pkiDir)}, opts...)...)
}

// runCrashChild is the child's whole life: start the request with an in-process worker that SIGKILLs
// this process at the step named by the job. It returns only when there is no job (exit code -1).
func runCrashChild() int {
	raw := os.Getenv(crashChildEnv)
	if raw == "" {
		return -1
	}
	var job crashJob
	if err := json.Unmarshal([]byte(raw), &job); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	st, err := openCrashStore(ctx, job.Claims)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	kill := func(_ context.Context, _ oduflow.RequestRef, step string) {
		if step == job.KillAt {
			_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {} // never returns: the signal is on its way
		}
	}
	d, err := newSaltDispatcher(job.Master, job.Events, job.KeyFile, job.PKIDir, st, oduflow.WithHooks(oduflow.Hooks{Step: kill}))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	if _, err := d.Start(ctx, job.Minion, job.Request, receipt.ProfileConfigure); err != nil {
		fmt.Fprintln(os.Stderr, "start:", err)
		return 2
	}
	<-ctx.Done()
	fmt.Fprintln(os.Stderr, "the worker never reached", job.KillAt)
	return 3
}

// runCrashedDispatcher runs a child dispatcher process until it kills itself at step.
func runCrashedDispatcher(t *testing.T, job crashJob) {
	t.Helper()
	data, err := json.Marshal(job)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), crashChildEnv+"="+string(data))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err = cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		t.Fatalf("child dispatcher: %v; stderr:\n%s", err, stderr.String())
	}
	if ws, ok := ee.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("child dispatcher did not die by SIGKILL at %s: %v; stderr:\n%s", job.KillAt, err, stderr.String())
	}
}

// TestKillDispatcherAtEachStep: a dispatcher process with etcd claims is SIGKILLed at each worker step.
// Never a second publication: status is running while the dead process's lock lives (its TTL), then
// unknown; a repeated Start from another replica publishes nothing; a client left with a possibly
// dispatched request is quarantined for every profile on every replica; Resume from another replica
// behind another master (serving the same minion) reads the minion's receipt.
func TestKillDispatcherAtEachStep(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	type want struct {
		status     receipt.Status
		runs       int
		quarantine bool
		resumable  bool
	}
	cases := []struct {
		step string
		want want
	}{
		{"claimed", want{receipt.StatusUnknown, 0, false, false}},
		{"lease", want{receipt.StatusUnknown, 0, false, false}},
		{"dispatch_recorded", want{receipt.StatusUnknown, 0, true, false}},
		{"publish_replied", want{receipt.StatusUnknown, 1, true, true}},
		{"returned", want{receipt.StatusUnknown, 1, true, true}},
		{"committed", want{receipt.StatusSucceeded, 1, false, false}},
	}
	for _, tc := range cases {
		t.Run(tc.step, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			prefix := newStore(t).Prefix()
			storeURL := claimsURL(t, prefix)
			m := newProtoMinion(newMinion())
			sim1, sim2 := startMaster(t, m), startMaster(t, m)
			req := receipt.NewRequestID()
			runCrashedDispatcher(t, crashJob{Claims: storeURL, Master: sim1.Addr(), Events: sim1.EventsAddr(),
				KeyFile: sim1.KeyFile(), PKIDir: sim1.PKIDir(), Minion: m.id, Request: req, KillAt: tc.step})

			replica := func(sim *salttest.Master) *oduflow.Dispatcher {
				st, err := openCrashStore(ctx, storeURL)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = st.Close() })
				d, err := newSaltDispatcher(sim.Addr(), sim.EventsAddr(), sim.KeyFile(), sim.PKIDir(), st)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = d.Close(closedContext()) })
				return d
			}
			b, c := replica(sim2), replica(sim1)
			status := func(d *oduflow.Dispatcher) receipt.Status {
				r, err := d.Status(ctx, m.id, req, receipt.ProfileConfigure)
				if err != nil {
					t.Fatal(err)
				}
				return r.Status
			}
			lockHeld := func() bool {
				held, err := b.WorkerActive(ctx, req)
				if err != nil {
					t.Fatal(err)
				}
				return held
			}
			// The dead process's request lock outlives it by up to the TTL; while it does, the request is
			// running (never unknown), and once it is gone, unknown (a dispatched one at once, one never
			// dispatched after the launch grace).
			testwait.Until(t, "still running long after the TTL and the launch grace",
				crashTTL+crashTimers().LaunchGrace+10*time.Second, func() bool {
					// Status first, then the lock: a lock seen held after a status of unknown was held
					// while that status was read (nobody takes the dead worker's lock again). The other
					// order races the lock's expiry, now that a dispatched request without its lock is
					// unknown at once (no launch grace).
					got := status(b)
					held := lockHeld()
					if got != receipt.StatusRunning && held && !tc.want.status.Terminal() {
						t.Fatalf("%s while the dead worker's lock still lives", got)
					}
					return got != receipt.StatusRunning
				})
			for _, d := range []*oduflow.Dispatcher{b, c} {
				if got := status(d); got != tc.want.status {
					t.Fatalf("status after the TTL: %s, want %s", got, tc.want.status)
				}
				again, err := d.Start(ctx, m.id, req, receipt.ProfileConfigure)
				if err != nil || again.Status != tc.want.status {
					t.Fatalf("repeated Start: %+v %v", again, err)
				}
			}
			cl, err := b.Lookup(ctx, m.id, req)
			if err != nil {
				t.Fatal(err)
			}
			if cl.Quarantining() != tc.want.quarantine {
				t.Fatalf("quarantining %v: %+v", cl.Quarantining(), cl)
			}
			if tc.want.quarantine {
				// Every replica sees it, for every profile.
				for i, p := range []receipt.Profile{receipt.ProfileProduction, receipt.ProfileVolumeResize} {
					d := []*oduflow.Dispatcher{b, c}[i]
					other := receipt.NewRequestID()
					if _, err := d.Start(ctx, m.id, other, p); err != nil {
						t.Fatal(err)
					}
					got := waitFinalClaim(t, d, m.id, other)
					if got.Status != receipt.StatusFailed || got.ErrorCode != claims.CodeQuarantined {
						t.Fatalf("%s start on a quarantined client: %+v", p, got)
					}
				}
			}
			if tc.want.resumable {
				if _, err := b.Resume(ctx, m.id, req); err != nil {
					t.Fatal(err)
				}
				if got := waitFinalClaim(t, b, m.id, req); got.Status != receipt.StatusSucceeded {
					t.Fatalf("after Resume through the second master: %+v", got)
				}
				if got := status(c); got != receipt.StatusSucceeded {
					t.Fatalf("another replica after Resume: %s", got)
				}
			}
			if n1, n2 := sim1.PublicationCount("oduflow_job.run", ""), sim2.PublicationCount("oduflow_job.run", ""); n1 != tc.want.runs || n2 != 0 {
				t.Fatalf("publications of oduflow_job.run: %d + %d, want %d + 0", n1, n2, tc.want.runs)
			}
			if m.runCount() != tc.want.runs {
				t.Fatalf("minion ran %d times, want %d", m.runCount(), tc.want.runs)
			}
		})
	}
}

func waitFinalClaim(t *testing.T, d *oduflow.Dispatcher, minion, req string) *claims.Claim {
	t.Helper()
	var c *claims.Claim
	testwait.Until(t, "claim "+req+" not final", 30*time.Second, func() bool {
		got, err := d.Lookup(context.Background(), minion, req)
		c = got
		return err == nil && got.Phase.Final()
	})
	return c
}
