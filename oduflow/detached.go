package oduflow

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/oduflow/oduflow-go/internal/errmark"
	"github.com/oduflow/oduflow-go/internal/safefile"
	"github.com/oduflow/oduflow-go/oduflow/claims"

	"github.com/cockroachdb/errors"
	"golang.org/x/sys/unix"

	"github.com/oduflow/oduflow-go/receipt"
)

// workerEnv marks a process started as a detached worker (its value is "1"). The worker's command line is
// exactly: <exe> <minion id> <request id>.
const workerEnv = "ODUFLOW_DETACHED_WORKER"

// workerLogName is the conventional name of the detached workers' log file inside the claim directory
// (filepath.Join(claimDir, workerLogName) suits WithWorkerLog).
const workerLogName = "worker.log"

// WorkerLaunchError reports a failed detached worker launch for one request; it matches ErrWorkerLaunch
// (errors.Is). Start returns it with the response: the claim was committed failed (CodeWorkerLaunch) and
// nothing was published. Resume returns it when its worker could not be started or ended at once with an
// error; the request stays unknown.
type WorkerLaunchError struct {
	// RequestID is the request whose worker was not launched.
	RequestID string
	// Cause is why (the os/exec error, or the worker's own exit). It is not in the Unwrap chain: decide on
	// ErrWorkerLaunch and log Cause (read the field), so that a cause such as context.Canceled never makes
	// errors.Is read this known failure (nothing published) as an interrupted one.
	Cause error
}

func (e *WorkerLaunchError) Error() string {
	msg := "oduflow: worker launch failed for request " + e.RequestID
	if e.Cause != nil {
		msg += ": " + e.Cause.Error()
	}
	return msg
}

// Unwrap makes errors.Is(err, ErrWorkerLaunch) true.
func (e *WorkerLaunchError) Unwrap() error { return ErrWorkerLaunch }

// openWorkerLogChecked opens path as WithWorkerLog does. A path that exists and is not a regular file (a
// FIFO, a device, a symlink) is refused before it is opened, so the open never blocks.
func openWorkerLogChecked(path string) (*os.File, error) {
	if st, err := os.Lstat(path); err == nil && !st.Mode().IsRegular() {
		return nil, errors.Wrapf(safefile.ErrNotRegular, "oduflow: worker log %s is not a regular file", errors.Safe(path))
	}
	return openWorkerLog(path)
}

// openWorkerLog opens the detached workers' log file under the safe-file rules. The open is non-blocking:
// a FIFO planted at the log path would otherwise block the launcher (after the claim is written) until some
// process opened it for reading. A FIFO, socket or device is refused at once (safefile.ErrNotRegular), as is
// a symlink, a foreign or group/other-accessible file, or one with several links (safefile.ErrUnsafePath).
func openWorkerLog(path string) (*os.File, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, errors.Wrap(err, "oduflow: worker log path")
	}
	if _, err := safefile.OpenStore(filepath.Dir(abs)); err != nil {
		return nil, errors.Wrap(err, "oduflow: worker log directory")
	}
	fd, err := unix.Open(abs, unix.O_WRONLY|unix.O_APPEND|unix.O_CREAT|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, 0o600)
	switch {
	case err == unix.ENXIO || err == unix.EOPNOTSUPP || err == unix.EISDIR:
		// ENXIO: a FIFO without a reader or a unix socket; EISDIR: a directory.
		return nil, errmark.Mark(errors.Wrap(err, "oduflow: worker log is not a regular file"), safefile.ErrNotRegular, safefile.ErrUnsafePath)
	case err == unix.ELOOP:
		return nil, errmark.Mark(errors.Wrap(err, "oduflow: worker log is a symlink"), safefile.ErrUnsafePath)
	case err != nil:
		return nil, errors.Wrap(err, "oduflow: open worker log")
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		_ = unix.Close(fd)
		return nil, errors.Wrap(err, "oduflow: stat worker log")
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		_ = unix.Close(fd)
		return nil, errmark.Mark(errors.New("oduflow: worker log is not a regular file"), safefile.ErrNotRegular, safefile.ErrUnsafePath)
	}
	if int(st.Uid) != os.Geteuid() || st.Mode&0o077 != 0 || st.Nlink != 1 {
		_ = unix.Close(fd)
		return nil, errors.Wrap(safefile.ErrUnsafePath, "oduflow: worker log is not a private regular file")
	}
	// The descriptor becomes the worker's stdout and stderr: give it back ordinary blocking writes.
	if err := unix.SetNonblock(fd, false); err != nil {
		_ = unix.Close(fd)
		return nil, errors.Wrap(err, "oduflow: worker log flags")
	}
	return os.NewFile(uintptr(fd), abs), nil
}

// launchDetached starts the worker process of claim c. The returned channel yields the process's exit
// result once (it is reaped if this process lives long enough).
func (d *Dispatcher) launchDetached(c *claims.Claim) (<-chan error, error) {
	cmd := exec.Command(d.mode.exe, c.MinionID, c.RequestID)
	cmd.Env = append(append(os.Environ(), workerEnv+"=1"), d.mode.env...)
	// stdin, stdout and stderr are /dev/null unless a log file is configured: never the launcher's.
	if d.workerLogFile != nil {
		cmd.Stdout, cmd.Stderr = d.workerLogFile, d.workerLogFile
	} else if d.workerLog != "" {
		f, err := openWorkerLog(d.workerLog)
		if err != nil {
			return nil, err
		}
		defer func() { _ = f.Close() }() // the child has its own descriptor after Start
		cmd.Stdout, cmd.Stderr = f, f
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true} // survives the launching tool
	if err := cmd.Start(); err != nil {
		return nil, errors.Wrap(err, "oduflow: start detached worker")
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	return done, nil
}

// failLaunch commits terminal failed (CodeWorkerLaunch, a preflight record: nothing was published) for a
// claim whose worker could not be started, if it is still in phase claimed and nobody holds its request
// lock. It returns the current claim.
func (d *Dispatcher) failLaunch(ctx context.Context, c *claims.Claim) *claims.Claim {
	lk, err := d.tryRequestLock(ctx, c.RequestID)
	if err != nil {
		return c // a worker runs it after all (or the lock cannot be read): leave it to the status rules
	}
	defer func() { _ = lk.Release() }()
	cur, err := d.store.Get(ctx, c.RequestID)
	if err != nil || cur.Phase != claims.PhaseClaimed {
		return c
	}
	if out := d.finalize(ctx, cur, receipt.StatusFailed, 0, 1, claims.CodeWorkerLaunch, evidencePreflight); out != nil {
		return out
	}
	return cur
}

// WorkerActive reports whether a worker (or a Resume's polling) holds the request's lock right now, in
// any process. A tool that started a detached Resume follows it with this.
func (d *Dispatcher) WorkerActive(ctx context.Context, request string) (_ bool, err error) {
	defer errmark.Boundary(&err)
	if err := receipt.ValidateRequestID(request); err != nil {
		return false, invalid(err, "request id")
	}
	return d.leases.RequestLockHeld(ctx, request)
}

// resumeDetached starts a detached worker for an unknown request whose ResumedAt was just recorded, and
// returns once the worker holds the request lock (it is polling), or has ended, or the launch grace has
// passed.
func (d *Dispatcher) resumeDetached(ctx context.Context, c *claims.Claim) (Response, error) {
	done, err := d.launchDetached(c)
	if err != nil {
		d.claimLog(c).Error("resume: worker launch failed", "error", err.Error())
		r, rerr := d.respond(ctx, c)
		if rerr != nil {
			return Response{}, rerr
		}
		return r, &WorkerLaunchError{RequestID: c.RequestID, Cause: err}
	}
	grace := time.NewTimer(d.timers.LaunchGrace)
	defer grace.Stop()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return Response{}, ctx.Err()
		case <-grace.C:
			return d.currentResponse(ctx, c)
		case werr := <-done:
			r, rerr := d.currentResponse(ctx, c)
			if rerr != nil {
				return Response{}, rerr
			}
			if werr != nil && r.Status == receipt.StatusUnknown {
				return r, &WorkerLaunchError{RequestID: c.RequestID, Cause: werr}
			}
			return r, nil
		case <-tick.C:
			if held, err := d.leases.RequestLockHeld(ctx, c.RequestID); err == nil && held {
				return d.currentResponse(ctx, c)
			}
		}
	}
}

// currentResponse re-reads the claim and answers by the status rules.
func (d *Dispatcher) currentResponse(ctx context.Context, c *claims.Claim) (Response, error) {
	cur, err := d.store.Get(ctx, c.RequestID)
	if err != nil {
		return Response{}, err
	}
	return d.respond(ctx, cur)
}

// isWorkerProcess reports whether this process was started as a detached worker.
func isWorkerProcess() bool { return os.Getenv(workerEnv) == "1" }

// RunWorkerIfRequested is the entry point of a detached worker; an embedding binary calls it first thing
// in main. When the process was started as a detached worker (WithDetachedWorkers) it builds a Dispatcher
// with build (the same configuration as the launching process), runs the worker for the two identities
// in os.Args[1:], and returns handled=true; the caller then exits (status 1 if err != nil). Otherwise it
// returns (false, nil) at once and calls nothing.
//
// The build func must configure everything the launching Dispatcher had that the worker needs: the claim
// directory, timers, and WithCustomCatalog when custom executions are used (without it a custom claim
// fails its preflight with payload_unavailable, and nothing is published). Its output goes to /dev/null
// unless the launcher used WithWorkerLog.
func RunWorkerIfRequested(ctx context.Context, build func() (*Dispatcher, error)) (handled bool, err error) {
	defer errmark.Boundary(&err)
	if !isWorkerProcess() {
		return false, nil
	}
	d, err := build()
	if err != nil {
		return true, err
	}
	defer func() {
		done, cancel := context.WithCancel(ctx)
		cancel() // the worker below has returned: nothing left to drain
		_ = d.Close(done)
	}()
	return true, d.runDetachedWorker(ctx, os.Args[1:])
}

// runDetachedWorker runs one worker synchronously in this process. args are exactly the minion id and the request
// id; the persisted profile/role pair is re-validated against the profile table (WithProfiles) before anything is
// published. What it does is decided from the persisted claim alone: a claim in phase claimed is
// dispatched (see docs/ARCHITECTURE.md, Worker); an unresolved dispatched protocol-1 claim whose polling window (from
// its dispatch or its latest Resume) is still open is polled (a detached Resume); anything else is left
// as it is.
func (d *Dispatcher) runDetachedWorker(ctx context.Context, args []string) (err error) {
	defer errmark.Boundary(&err)
	if len(args) != 2 {
		return errmark.Mark(errors.New("oduflow: worker arguments are exactly <minion id> <request id>"), claims.ErrInvalidInput)
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
