//go:build faultinject

package cli

import (
	"context"
	"fmt"
	"os"
	"slices"
	"syscall"
	"time"

	"github.com/oduflow/oduflow-go/oduflow"
)

// faultStopEnv names the worker step at which a worker process built with the faultinject tag stops
// itself (SIGSTOP), so that a test or an operator can hold it there for as long as a pause should last
// and then continue it (SIGCONT).
const faultStopEnv = "ODUFLOW_FAULT_STOP_AT"

// faultSteps are the names Hooks.Step reports, in the order a worker reaches them.
func faultSteps() []string {
	return []string{"claimed", "lease", "dispatch_recorded", "publish_sending", "publish_replied", "returned", "committed"}
}

// faultOptions returns the dispatcher options of the fault points: for a detached worker with
// ODUFLOW_FAULT_STOP_AT set, a step hook that stops this process at that step. The launcher only
// checks the name (a misspelt step is a usage error before any claim is written).
func (e *env) faultOptions() ([]oduflow.Option, error) {
	at := e.getenv(faultStopEnv)
	if at == "" {
		return nil, nil
	}
	if !slices.Contains(faultSteps(), at) {
		return nil, usagef("%s=%q: want one of %v", faultStopEnv, at, faultSteps())
	}
	if !e.worker {
		return nil, nil
	}
	return []oduflow.Option{oduflow.WithHooks(oduflow.Hooks{Step: func(_ context.Context, _ oduflow.RequestRef, step string) {
		if step != at {
			return
		}
		fmt.Fprintf(e.stderr, "oduflowctl worker %d: fault point %s: stopping (SIGCONT continues)\n", os.Getpid(), step)
		// The whole process stops here, on the worker's goroutine, until SIGCONT. A process-directed
		// signal may stop the process a moment after kill returns: the sleep keeps this goroutine from
		// taking the next step in that moment.
		_ = syscall.Kill(os.Getpid(), syscall.SIGSTOP)
		time.Sleep(100 * time.Millisecond)
	}})}, nil
}
