package cli

import (
	"context"
	"time"

	"github.com/cockroachdb/errors"

	"github.com/oduflow/oduflow-go/oduflow"
	"github.com/oduflow/oduflow-go/receipt"
)

// waitFlags are the flags of commands that can follow a request to its end.
type waitFlags struct {
	wait     bool
	interval time.Duration
	timeout  time.Duration
}

func (w *waitFlags) register(fs interface {
	BoolVar(*bool, string, bool, string)
	DurationVar(*time.Duration, string, time.Duration, string)
}) {
	fs.BoolVar(&w.wait, "wait", false, "wait for a terminal status, showing progress on stderr")
	fs.DurationVar(&w.interval, "interval", 500*time.Millisecond, "with --wait: how often to read the status")
	fs.DurationVar(&w.timeout, "timeout", 0, "with --wait: stop waiting after this long (0: no limit); the request goes on")
}

func (w *waitFlags) check(cmd string) error {
	if w.interval <= 0 {
		return usagef("%s: --interval %s: must be positive", cmd, w.interval)
	}
	if w.timeout < 0 {
		return usagef("%s: --timeout %s: must not be negative", cmd, w.timeout)
	}
	return nil
}

func cmdStart(e *env, args []string) error {
	fs := newFlagSet("start", "start PROFILE MINION [REQUEST_ID] [--wait]\n\n"+
		"Starts a request for a fixed profile (configure, production, volume_resize, credentials) and prints\n"+
		"the response object. A new canonical request id is generated when REQUEST_ID is omitted. The work runs\n"+
		"in a detached worker process, so the request goes on after this command exits; repeating the command\n"+
		"with the same REQUEST_ID never publishes again.", e.g, e.stderr)
	var w waitFlags
	w.register(fs)
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if err := positional("start", pos, 2, 3, "PROFILE MINION [REQUEST_ID]"); err != nil {
		return err
	}
	profile, err := fixedProfile("start", pos[0])
	if err != nil {
		return err
	}
	minion, request := pos[1], receipt.NewRequestID()
	if len(pos) == 3 {
		request = pos[2]
	}
	if err := firstErr(checkMinion("start", minion), checkRequest("start", request), w.check("start"),
		e.g.needMaster("start", true)); err != nil {
		return err
	}
	p, err := e.printer()
	if err != nil {
		return err
	}
	d, err := e.dispatcher(e.ctx)
	if err != nil {
		return err
	}
	if err := e.probe(e.ctx, "start"); err != nil {
		return err
	}
	r, err := d.Start(e.ctx, profile, minion, request)
	if err != nil {
		if errors.Is(err, oduflow.ErrWorkerLaunch) && r.RequestID != "" {
			_ = p.response(r) // the claim is failed (worker_launch_failed); nothing was published
		}
		return err
	}
	if w.wait {
		r, err = e.waitFor(e.ctx, r, w.interval, w.timeout, func(ctx context.Context) (oduflow.Response, error) {
			return d.Status(ctx, profile, minion, request)
		})
		if err != nil && e.ctx.Err() == nil && r.Status.Terminal() {
			err = nil
		}
		if perr := p.response(r); perr != nil {
			return perr
		}
		if err != nil {
			return silentExit(ExitFailed)
		}
		return statusExit(r.Status)
	}
	if err := p.response(r); err != nil {
		return err
	}
	return statusExit(r.Status)
}

func cmdStatus(e *env, args []string) error {
	fs := newFlagSet("status", "status PROFILE MINION REQUEST_ID [--wait]\n\n"+
		"Prints the response object of a request. Exit status 1 when it is failed or unknown.", e.g, e.stderr)
	var w waitFlags
	w.register(fs)
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if err := positional("status", pos, 3, 3, "PROFILE MINION REQUEST_ID"); err != nil {
		return err
	}
	profile, err := fixedProfile("status", pos[0])
	if err != nil {
		return err
	}
	minion, request := pos[1], pos[2]
	if err := firstErr(checkMinion("status", minion), checkRequest("status", request), w.check("status"),
		e.g.needMaster("status", true)); err != nil {
		return err
	}
	p, err := e.printer()
	if err != nil {
		return err
	}
	d, err := e.dispatcher(e.ctx)
	if err != nil {
		return err
	}
	get := func(ctx context.Context) (oduflow.Response, error) { return d.Status(ctx, profile, minion, request) }
	r, err := get(e.ctx)
	if err != nil {
		return err
	}
	if w.wait {
		r, err = e.waitFor(e.ctx, r, w.interval, w.timeout, get)
		if perr := p.response(r); perr != nil {
			return perr
		}
		if err != nil {
			return silentExit(ExitFailed)
		}
		return statusExit(r.Status)
	}
	if err := p.response(r); err != nil {
		return err
	}
	return statusExit(r.Status)
}

func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
