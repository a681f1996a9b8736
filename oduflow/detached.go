package oduflow

import (
	"context"
	"os"
	"os/exec"
	"syscall"

	"github.com/cockroachdb/errors"
)

// WorkerEnv marks a process started as a detached worker (its value is "1"). The worker's command line is
// exactly: <exe> <minion id> <request id>.
const WorkerEnv = "ODUFLOW_DETACHED_WORKER"

func (d *Dispatcher) launchDetached(c *Claim) error {
	cmd := exec.Command(d.mode.exe, c.MinionID, c.RequestID)
	cmd.Env = append(append(os.Environ(), WorkerEnv+"=1"), d.mode.env...)
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true} // survives the launching tool
	if err := cmd.Start(); err != nil {
		return errors.Wrap(err, "oduflow: start detached worker")
	}
	go func() { _ = cmd.Wait() }() // reap it if this process lives long enough
	return nil
}

// IsWorkerProcess reports whether this process was started as a detached worker.
func IsWorkerProcess() bool { return os.Getenv(WorkerEnv) == "1" }

// MaybeRunWorker is the hook an embedding binary calls first thing in main. When the process is a
// detached worker (WorkerEnv set) it builds a Dispatcher with build (the same configuration as the
// launching process), runs the worker for the two identities in os.Args[1:], and returns handled=true; the
// caller then exits (status 1 if err != nil). Otherwise it returns (false, nil) and does nothing.
func MaybeRunWorker(ctx context.Context, build func() (*Dispatcher, error)) (handled bool, err error) {
	if !IsWorkerProcess() {
		return false, nil
	}
	d, err := build()
	if err != nil {
		return true, err
	}
	defer func() { _ = d.Close() }()
	return true, d.RunWorker(ctx, os.Args[1:])
}

// RunWorker runs one worker synchronously in this process. args are exactly the minion id and the request
// id; the persisted profile/role pair is re-validated against profiles.Fixed() before anything is
// published.
func (d *Dispatcher) RunWorker(ctx context.Context, args []string) error {
	if len(args) != 2 {
		return errors.Mark(errors.New("oduflow: worker arguments are exactly <minion id> <request id>"), ErrInvalidInput)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-d.ctx.Done():
			cancel()
		case <-ctx.Done():
		}
	}()
	return d.runWorker(ctx, args[0], args[1])
}
