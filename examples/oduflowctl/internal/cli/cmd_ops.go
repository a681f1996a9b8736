package cli

import (
	"context"
	"fmt"
	"io"
	"maps"
	"os"
	"os/user"
	"slices"
	"time"

	"github.com/oduflow/oduflow-go/oduflow"
	"github.com/oduflow/oduflow-go/receipt"
)

func cmdPing(e *env, args []string) error {
	fs := newFlagSet("ping", "ping MINION\n\n"+
		"Checks that the exact minion is known to the master (key accepted), answers test.ping, and has the\n"+
		"oduflow_job module with protocol 1 and its pillar ready. Exit status 0 when ready for a request.", e.g, e.stderr)
	pos, err := parseArgs(fs, args, 1, 1, "MINION")
	if err != nil {
		return err
	}
	minion := pos[0]
	if err := firstErr(e.checkMinion("ping", minion), e.g.needMaster("ping", true)); err != nil {
		return err
	}
	p, err := e.printer()
	if err != nil {
		return err
	}
	// Ping touches no claim: use a private scratch claim directory so that ping works without one.
	scratch, err := os.MkdirTemp("", "oduflowctl-ping-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(scratch)
	e.g.stateDir, e.g.claims = scratch, ""
	d, err := e.dispatcher(e.ctx)
	if err != nil {
		return err
	}
	r, err := d.Ping(e.ctx, minion)
	if err != nil {
		return err
	}
	out := readiness(minion, r)
	if err := p.value(out, func(w io.Writer) {
		fmt.Fprintf(w, "minion        %s\nkey accepted  %v\nreachable     %v\nprotocol      %d\npillar ready  %v\n",
			minion, r.KeyAccepted, r.Reachable, r.Protocol, r.PillarReady)
		if r.Protocol > 0 {
			fmt.Fprintf(w, "fencing       %v\nruntime guard %v\n", r.Fencing, r.RuntimeGuard)
		}
		if r.RuntimeGuardError != "" {
			fmt.Fprintf(w, "guard error   %s\n", r.RuntimeGuardError)
		}
		for _, fn := range slices.Sorted(maps.Keys(r.RuntimeGuardForms)) {
			fmt.Fprintf(w, "salt form     %s: %s\n", fn, r.RuntimeGuardForms[fn])
		}
		fmt.Fprintf(w, "ready         %v\n", r.Ready())
	}); err != nil {
		return err
	}
	if !r.Ready() {
		return silentExit(ExitFailed)
	}
	return nil
}

// pingResult is what ping prints: the minion, the library's Readiness and its verdict.
type pingResult struct {
	MinionID string `json:"minion_id"`
	oduflow.Readiness
	Ready bool `json:"ready"`
}

func readiness(minion string, r *oduflow.Readiness) pingResult {
	return pingResult{MinionID: minion, Readiness: *r, Ready: r.Ready()}
}

func cmdResume(e *env, args []string) error {
	fs := newFlagSet("resume", "resume MINION REQUEST_ID [--wait]\n\n"+
		"Continues status polling (oduflow_job.status on that minion only) of an unknown, dispatched request for\n"+
		"another window. The polling runs in a detached worker process: this command prints the response object\n"+
		"(unknown until a receipt arrives; exit status 5) and returns at once. With --wait it follows the polling\n"+
		"until it ends (a terminal receipt, or the window spent) and prints the final response; interrupting it\n"+
		"only stops the waiting. It never publishes a state run and never creates a request.", e.g, e.stderr)
	minion, request, w, err := e.parseMinionRequest(fs, args)
	if err != nil {
		return err
	}
	p, d, err := e.printerAndDispatcher()
	if err != nil {
		return err
	}
	key := requestKey(e.ctx, d, minion, request)
	r, err := d.Resume(e.ctx, minion, key)
	if err != nil {
		return p.printLaunchFailure(asCaller(r, key, request), err)
	}
	if w.wait {
		r, err = followResume(e, d, r, w)
	}
	return p.finish(asCaller(r, key, request), err)
}

// followResume waits while the detached worker polls (it holds the request lock) and the status is not
// terminal, showing progress on stderr; it returns the status read after the polling ended.
func followResume(e *env, d *oduflow.Dispatcher, r oduflow.Response, w waitFlags) (oduflow.Response, error) {
	ctx := e.ctx
	if w.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, w.timeout)
		defer cancel()
	}
	ticker := time.NewTicker(w.interval)
	defer ticker.Stop()
	start := time.Now()
	for !r.Status.Terminal() {
		select {
		case <-ctx.Done():
			fmt.Fprintf(e.stderr, "stopped waiting after %.1fs; the polling goes on: oduflowctl status ... %s\n",
				time.Since(start).Seconds(), r.RequestID)
			return r, ctx.Err()
		case <-ticker.C:
		}
		active, err := d.WorkerActive(ctx, r.RequestID)
		if err != nil {
			return r, err
		}
		next, err := statusAnyProfile(ctx, d, r.MinionID, r.RequestID)
		if err != nil {
			return r, err
		}
		r = next
		fmt.Fprintf(e.stderr, "%6.1fs polling, status %s\n", time.Since(start).Seconds(), r.Status)
		if !active {
			break
		}
	}
	return r, nil
}

// statusAnyProfile reads a request's status through the profile its claim is bound to.
func statusAnyProfile(ctx context.Context, d *oduflow.Dispatcher, minion, request string) (oduflow.Response, error) {
	c, err := d.Lookup(ctx, minion, request)
	if err != nil {
		return oduflow.Response{}, err
	}
	return d.Status(ctx, minion, request, c.EffectiveProfile())
}

func cmdReconcile(e *env, args []string) error {
	fs := newFlagSet("reconcile", "reconcile MINION REQUEST_ID (--from-minion | --assert succeeded|failed --reason TEXT)\n\n"+
		"Resolves an unknown request explicitly and so releases the quarantine it causes. --from-minion fetches\n"+
		"the minion's exact receipt live through oduflow_job.status. --assert records an outcome you established\n"+
		"by other means, as asserted, with who and why: it never counts as a minion receipt.", e.g, e.stderr)
	fromMinion := fs.Bool("from-minion", false, "resolve with the minion's exact receipt (oduflow_job.status)")
	assert := fs.String("assert", "", "record an asserted outcome: succeeded or failed")
	reason := fs.String("reason", "", "with --assert: why (required)")
	who := fs.String("who", "", "with --assert: who asserts (default: the invoking user)")
	passed := fs.Int("passed", 0, "with --assert: optional passed count")
	total := fs.Int("total", 0, "with --assert: optional total count")
	pos, err := parseArgs(fs, args, 2, 2, "MINION REQUEST_ID")
	if err != nil {
		return err
	}
	minion, request := pos[0], pos[1]
	if err := firstErr(e.checkMinion("reconcile", minion), checkRequest("reconcile", request)); err != nil {
		return err
	}
	var ev oduflow.Reconciliation
	switch {
	case *fromMinion && *assert != "":
		return usagef("reconcile: --from-minion and --assert exclude each other")
	case *fromMinion:
		ev = oduflow.FromMinion{}
	case *assert != "":
		st := receipt.Status(*assert)
		if st != receipt.StatusSucceeded && st != receipt.StatusFailed {
			return usagef("reconcile: --assert %q: want succeeded or failed", *assert)
		}
		if *reason == "" {
			return usagef("reconcile: --assert needs --reason TEXT")
		}
		if *passed < 0 || *total < 0 || *passed > *total {
			return usagef("reconcile: --passed %d --total %d: want 0 <= passed <= total", *passed, *total)
		}
		if *who == "" {
			*who = invokingUser()
		}
		ev = oduflow.Assert{Outcome: st, Passed: *passed, Total: *total, Who: *who, Why: *reason}
	default:
		return usagef("reconcile: say --from-minion or --assert succeeded|failed --reason TEXT")
	}
	if err := e.g.needMaster("reconcile", true); err != nil {
		return err
	}
	p, d, err := e.printerAndDispatcher()
	if err != nil {
		return err
	}
	r, err := d.Reconcile(e.ctx, minion, request, ev)
	if err != nil {
		return err
	}
	return p.finish(r, nil)
}

// invokingUser names the operator: the sudo caller if any, else the current user.
func invokingUser() string {
	if u := os.Getenv("SUDO_USER"); u != "" {
		return u
	}
	if u, err := user.Current(); err == nil {
		return u.Username
	}
	return fmt.Sprintf("uid %d", os.Getuid())
}
