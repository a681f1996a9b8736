package cli

import (
	"context"
	"flag"
	"time"

	"github.com/oduflow/oduflow-go/oduflow"
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

// follow waits, as the flags say, from the first response until status reports a terminal
// status (see env.waitFor).
func (w *waitFlags) follow(e *env, first oduflow.Response,
	status func(context.Context) (oduflow.Response, error)) (oduflow.Response, error) {
	return e.waitFor(e.ctx, first, w.interval, w.timeout, status)
}

func cmdStart(e *env, args []string) error {
	fs := newFlagSet("start", "start PROFILE MINION [REQUEST_ID] [--wait]\n\n"+
		"Starts a request for a fixed profile (configure, production, volume_resize, credentials) and prints\n"+
		"the response object. A new canonical request id is generated when REQUEST_ID is omitted. The work runs\n"+
		"in a detached worker process, so the request goes on after this command exits; repeating the command\n"+
		"with the same REQUEST_ID never publishes again.", e.g, e.stderr)
	var w waitFlags
	w.register(fs)
	pos, err := parseArgs(fs, args, 2, 3, "PROFILE MINION [REQUEST_ID]")
	if err != nil {
		return err
	}
	profile, err := e.fixedProfile("start", pos[0])
	if err != nil {
		return err
	}
	minion, request := pos[1], requestArg(pos, 2)
	if err := e.checkRequestArgs("start", minion, request, &w); err != nil {
		return err
	}
	e.createStore = true
	p, d, err := e.printerAndDispatcher()
	if err != nil {
		return err
	}
	key := requestKey(e.ctx, d, minion, request)
	if err := e.probeUnlessClaimed(d, "start", minion, key); err != nil {
		return err
	}
	r, err := d.Start(e.ctx, minion, key, profile)
	if err != nil {
		return p.printLaunchFailure(asCaller(r, key, request), err)
	}
	if w.wait {
		r, err = w.follow(e, r, func(ctx context.Context) (oduflow.Response, error) {
			return d.Status(ctx, minion, key, profile)
		})
	}
	return p.finish(asCaller(r, key, request), err)
}

func cmdStatus(e *env, args []string) error {
	fs := newFlagSet("status", "status PROFILE MINION REQUEST_ID [--wait]\n\n"+
		"Prints the response object of a request. Exit status 1 when it failed, 4 when the master refused it,\n"+
		"5 when it is unknown (never start a replacement: reconcile), 7 when --wait timed out while it runs;\n"+
		"the recorded error code of a failed or unknown request is printed on stderr.", e.g, e.stderr)
	var w waitFlags
	w.register(fs)
	pos, err := parseArgs(fs, args, 3, 3, "PROFILE MINION REQUEST_ID")
	if err != nil {
		return err
	}
	profile, err := e.fixedProfile("status", pos[0])
	if err != nil {
		return err
	}
	minion, request := pos[1], pos[2]
	if err := e.checkRequestArgs("status", minion, request, &w); err != nil {
		return err
	}
	p, d, err := e.printerAndDispatcher()
	if err != nil {
		return err
	}
	key := requestKey(e.ctx, d, minion, request)
	get := func(ctx context.Context) (oduflow.Response, error) { return d.Status(ctx, minion, key, profile) }
	r, err := get(e.ctx)
	if err != nil {
		return err
	}
	if w.wait {
		r, err = w.follow(e, r, get)
	}
	return p.finish(asCaller(r, key, request), err)
}

// checkRequestArgs checks what a command that follows one request needs: the minion and
// request ids, the wait flags, and the master and event bus.
func (e *env) checkRequestArgs(cmd, minion, request string, w *waitFlags) error {
	return firstErr(e.checkMinion(cmd, minion), checkRequest(cmd, request), w.check(cmd), e.g.needMaster(cmd, true))
}

// parseMinionRequest parses the arguments of a command of the form "MINION REQUEST_ID
// [--wait]" (named by fs) and checks them (see checkRequestArgs).
func (e *env) parseMinionRequest(fs *flag.FlagSet, args []string) (minion, request string, w waitFlags, err error) {
	w.register(fs)
	pos, err := parseArgs(fs, args, 2, 2, "MINION REQUEST_ID")
	if err != nil {
		return "", "", w, err
	}
	minion, request = pos[0], pos[1]
	if err := e.checkRequestArgs(fs.Name(), minion, request, &w); err != nil {
		return "", "", w, err
	}
	return minion, request, w, nil
}

func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
