package oduflow

import (
	"context"
	"flag"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/oduflow/oduflow-go/internal/testproc"
	"github.com/oduflow/oduflow-go/receipt"
	"github.com/oduflow/oduflow-go/salt"
)

// Child processes of this test binary (detached workers and concurrent starters) take their configuration
// from these variables.
const (
	envAddr     = "ODUFLOW_TEST_SALT_ADDR"
	envEvents   = "ODUFLOW_TEST_SALT_EVENTS"
	envKeyFile  = "ODUFLOW_TEST_KEY_FILE"
	envClaimDir = "ODUFLOW_TEST_CLAIM_DIR"
	envPKIDir   = "ODUFLOW_TEST_PKI_DIR"
	envPauseAt  = "ODUFLOW_TEST_PAUSE_AT"  // worker step at which to stop and announce
	envStepFile = "ODUFLOW_TEST_STEP_FILE" // where steps are announced, one per line
	envChild    = "ODUFLOW_TEST_CHILD"     // "starter": concurrent Start calls
	envMinion   = "ODUFLOW_TEST_MINION"
	envRequest  = "ODUFLOW_TEST_REQUEST"
)

func TestMain(m *testing.M) {
	if isWorkerProcess() {
		handled, err := RunWorkerIfRequested(context.Background(), childDispatcher)
		if handled && err != nil {
			fmt.Fprintln(os.Stderr, "worker:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	switch os.Getenv(envChild) {
	case "starter":
		os.Exit(runStarterChild())
	case "launcher":
		os.Exit(runLauncherChild())
	case "creator":
		os.Exit(runCreatorChild())
	case "group":
		os.Exit(runGroupChild())
	}
	flag.Parse()
	widenParallel()
	os.Exit(m.Run())
}

// testParallel is -test.parallel unless the command line sets it: the tests that run in parallel mostly
// wait (on worker processes, the simulator's sockets, the minion model's timed runs), so the default,
// GOMAXPROCS (2 on a small CI machine), would leave them queued with the CPU idle.
const testParallel = 4

func widenParallel() {
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if f := flag.Lookup("test.parallel"); f != nil && !set && runtime.GOMAXPROCS(0) < testParallel {
		_ = f.Value.Set(strconv.Itoa(testParallel))
	}
}

// childDispatcher builds the child's dispatcher from the environment, with the step hook: each step is
// appended to the step file; at the pause step the worker waits for "<step file>.go" (then goes on) and
// otherwise blocks until killed.
func childDispatcher() (*Dispatcher, error) {
	client, err := salt.NewClient(os.Getenv(envAddr), salt.WithAuth(salt.UserKey("root", os.Getenv(envKeyFile))),
		salt.WithRequestTimeout(30*time.Second), salt.WithLogger(quietLogger()))
	if err != nil {
		return nil, err
	}
	stepFile, pauseAt := os.Getenv(envStepFile), os.Getenv(envPauseAt)
	hook := func(step string) {
		if stepFile == "" {
			return
		}
		f, err := os.OpenFile(stepFile, os.O_APPEND|os.O_WRONLY|os.O_CREATE, 0o600)
		if err == nil {
			_, _ = fmt.Fprintf(f, "%s %d\n", step, os.Getpid())
			_ = f.Close()
		}
		if step != pauseAt {
			return
		}
		// Until "<step file>.go" exists, or the test kills this process.
		for !waitUntil(time.Hour, func() bool { _, err := os.Stat(stepFile + ".go"); return err == nil }) {
		}
	}
	tm := testTimers()
	return New(client, SaltEvents(os.Getenv(envEvents)), WithClaimDir(os.Getenv(envClaimDir)),
		WithTimers(tm), WithLogger(quietLogger()), withStepHook(hook), WithPKIDir(os.Getenv(envPKIDir)))
}

type countHooks struct {
	created atomic.Int64
}

func (h *countHooks) hooks() Hooks { return Hooks{Started: h.Started} }

func (h *countHooks) Started(_ context.Context, _ RequestRef, created bool) {
	if created {
		h.created.Add(1)
	}
}

// runStarterChild: wait at the barrier, then 250 concurrent Start calls for one request; the process whose
// call created the claim runs the worker in-process and waits for the final result. Prints "created=N".
func runStarterChild() int {
	client, err := salt.NewClient(os.Getenv(envAddr), salt.WithAuth(salt.UserKey("root", os.Getenv(envKeyFile))),
		salt.WithLogger(quietLogger()))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = client.Close() }()
	hooks := &countHooks{}
	d, err := New(client, SaltEvents(os.Getenv(envEvents)), WithClaimDir(os.Getenv(envClaimDir)),
		WithTimers(testTimers()), WithLogger(quietLogger()), WithHooks(hooks.hooks()), WithPKIDir(os.Getenv(envPKIDir)))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	// the barrier: every child is ready, then the parent's line on stdin starts them together
	if err := testproc.AwaitRelease(); err != nil {
		fmt.Fprintln(os.Stderr, "barrier:", err)
		return 1
	}
	minion, request := os.Getenv(envMinion), os.Getenv(envRequest)
	var wg sync.WaitGroup
	var bad atomic.Int64
	for i := 0; i < 250; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := d.Start(context.Background(), minion, request, receipt.ProfileConfigure)
			if err != nil || r.JID == nil || r.RequestID != request {
				if bad.Add(1) == 1 { // the first one says why (the parent shows this process's stderr)
					fmt.Fprintf(os.Stderr, "starter %d: bad answer: %+v, %v\n", os.Getpid(), r, err)
				}
			}
		}()
	}
	wg.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_ = d.Wait(ctx)
	_ = d.Close(closedContext())
	fmt.Printf("created=%d bad=%d\n", hooks.created.Load(), bad.Load())
	return 0
}

func childEnv(e *simEnv, extra ...string) []string {
	env := append([]string{}, os.Environ()...)
	env = append(env, envAddr+"="+e.sim.Addr(), envEvents+"="+e.sim.EventsAddr(),
		envKeyFile+"="+e.keyFile, envClaimDir+"="+e.dir, envPKIDir+"="+e.sim.PKIDir())
	return append(env, extra...)
}

// readSteps returns the announced steps and the worker's pid.
func readSteps(path string) (steps []string, pid int) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, 0
	}
	// Only whole lines: a read can overlap the worker's append and end inside it, and a pid cut short
	// names another process (the test would stop and continue a stranger).
	text := string(data)
	text = text[:strings.LastIndexByte(text, '\n')+1]
	for _, line := range strings.Split(strings.TrimSpace(text), "\n") {
		var s string
		var p int
		if _, err := fmt.Sscanf(line, "%s %d", &s, &p); err == nil {
			steps, pid = append(steps, s), p
		}
	}
	return steps, pid
}
