package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/oduflow/oduflow-go/oduflow"
	"github.com/oduflow/oduflow-go/oduflow/etcdstore"
	"github.com/oduflow/oduflow-go/profiles"
	"github.com/oduflow/oduflow-go/salt"
)

// exitError carries an exit status and a one-line message.
type exitError struct {
	code int
	msg  string
}

func (e *exitError) Error() string { return e.msg }

func usagef(format string, args ...any) error {
	return &exitError{code: ExitUsage, msg: fmt.Sprintf(format, args...)}
}

func unreachablef(format string, args ...any) error {
	return &exitError{code: ExitUnreachable, msg: fmt.Sprintf(format, args...)}
}

func failedf(format string, args ...any) error {
	return &exitError{code: ExitFailed, msg: fmt.Sprintf(format, args...)}
}

// configf is a configuration error (exit status 2) that keeps its cause for exitFor.
func configf(cause error, format string, args ...any) error {
	return &exitError{code: ExitUsage, msg: fmt.Sprintf(format, args...) + ": " + oneLine(cause.Error())}
}

// silentExit ends the command with a status and nothing more to say (the result is printed).
type silentExit int

func (s silentExit) Error() string { return fmt.Sprintf("exit %d", int(s)) }

// env is one invocation's environment.
type env struct {
	ctx    context.Context
	g      *globals
	stdout io.Writer
	stderr io.Writer
	getenv func(string) string
	// salt is the client of the command's dispatcher, once built.
	salt *salt.Client
	// disp is the command's dispatcher, once built (the printer reads recorded error codes through it).
	disp *oduflow.Dispatcher
	// closers run when the command ends (clients opened on its behalf).
	closers []func() error
	// etcd is the command's etcd store once opened (claims and catalog), closed with closers.
	etcd *etcdstore.Store
	// worker: this process is a detached worker (it launches none).
	worker bool
	// createStore: the command writes claims (start, custom start, init), so its claim store and catalog
	// are created when missing. Every other command opens existing ones only: a mistyped --state-dir is
	// an error (exit status 6), never a new empty store that answers not_started.
	createStore bool
	// profiles is the profile table once loaded (ODUFLOW_PROFILES; the seeds' when unset).
	profiles *profiles.Table
}

// table loads the profile table once (ODUFLOW_PROFILES), before anything is written or sent.
func (e *env) table() (*profiles.Table, error) {
	if e.profiles == nil {
		t, err := e.g.settings().Table(e.ctx)
		if err != nil {
			return nil, fromEnv(err)
		}
		e.profiles = t
	}
	return e.profiles, nil
}

type command struct {
	summary string
	run     func(e *env, args []string) error
}

func commands() map[string]command {
	return map[string]command{
		"init":      {"create the claim store (and catalog) directories, 0700; start also creates them", cmdInit},
		"ping":      {"check that a minion is reachable, its key accepted and oduflow_job protocol 1 present", cmdPing},
		"start":     {"start a fixed-profile request (runs on in a detached worker)", cmdStart},
		"status":    {"show a request's status", cmdStatus},
		"resume":    {"resume status checking of an unknown request (never republishes)", cmdResume},
		"reconcile": {"resolve an unknown request from the minion's receipt or an asserted outcome", cmdReconcile},
		"custom":    {"custom states: validate, digest, start, status", cmdCustom},
		"claims":    {"claim store operations: migrate a file claim store into etcd", cmdClaims},
		"run":       {"run any function on any target, like salt; name every minion that did not return", cmdRun},
		"events":    {"watch the master event bus, sanitized (one JSON object per line)", cmdEvents},
		"module":    {"print the embedded oduflow_job.py, or --install DIR", cmdModule},
		"profiles":  {"print the profile table in effect (ODUFLOW_PROFILES), or --minion-config", cmdProfiles},
		"demo":      {"run the whole flow against the built-in Salt master simulator", cmdDemo},
	}
}

// Run is the whole program: it parses args (without the program name), runs one command and
// returns the exit status. Environment variables are read through os.Getenv.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return RunEnv(ctx, args, stdout, stderr, os.Getenv)
}

// RunEnv is Run with an explicit environment lookup.
func RunEnv(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	g := globalsFromEnv(getenv)
	e := &env{ctx: ctx, g: g, stdout: stdout, stderr: stderr, getenv: getenv}
	cmds := commands()

	top := flag.NewFlagSet("oduflowctl", flag.ContinueOnError)
	top.SetOutput(stderr)
	g.register(top)
	usage := func() { topUsage(stderr, top, cmds) }
	top.Usage = func() {}
	top.SetOutput(io.Discard)
	if err := top.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			usage()
			return ExitOK
		}
		fmt.Fprintf(stderr, "oduflowctl: %v (see oduflowctl --help)\n", err)
		return ExitUsage
	}
	top.SetOutput(stderr)
	rest := top.Args()
	if len(rest) == 0 {
		fmt.Fprintln(stderr, "oduflowctl: missing command (ping, start, status, resume, reconcile, custom, claims, run, events, module, demo); see oduflowctl --help")
		return ExitUsage
	}
	if rest[0] == "help" {
		if len(rest) > 1 {
			rest = []string{rest[1], "--help"}
		} else {
			topUsage(stdout, top, cmds)
			return ExitOK
		}
	}
	c, ok := cmds[rest[0]]
	if !ok {
		fmt.Fprintf(stderr, "oduflowctl: unknown command %q; see oduflowctl --help\n", rest[0])
		return ExitUsage
	}
	err := c.run(e, rest[1:])
	for i := len(e.closers) - 1; i >= 0; i-- {
		_ = e.closers[i]()
	}
	return exitCode(stderr, rest[0], err)
}

func exitCode(stderr io.Writer, name string, err error) int {
	code := exitFor(err)
	if err == nil || code == ExitOK {
		return code
	}
	var s silentExit
	if errors.As(err, &s) {
		return code // the result is printed
	}
	var ee *exitError
	if errors.As(err, &ee) {
		fmt.Fprintf(stderr, "oduflowctl %s\n", oneLine(ee.msg))
		return code
	}
	msg := oneLine(err.Error())
	switch code {
	case ExitUnreachable:
		msg = "cannot reach the master, event bus or claim store (nothing written): " + msg
	case ExitRefused:
		msg = "refused by the master: " + msg
	case ExitDamaged:
		msg = "damaged or missing claim store: " + msg
	}
	fmt.Fprintf(stderr, "oduflowctl %s: %s\n", name, msg)
	return code
}

func oneLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return s
}

// parseFlags wraps parse: a flag error becomes a one-line usage error naming the flag,
// --help prints the command's usage and returns flag.ErrHelp.
func parseFlags(fs *flag.FlagSet, args []string) ([]string, error) {
	usage, out := fs.Usage, fs.Output()
	fs.Usage = func() {}
	fs.SetOutput(io.Discard)
	pos, err := parse(fs, args)
	fs.Usage = usage
	fs.SetOutput(out)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			usage()
			return nil, err
		}
		return nil, usagef("%s: %v (see oduflowctl %s --help)", fs.Name(), err, fs.Name())
	}
	return pos, nil
}

func topUsage(w io.Writer, top *flag.FlagSet, cmds map[string]command) {
	fmt.Fprint(w, `Usage: oduflowctl [global flags] COMMAND [flags] [args]

oduflowctl dispatches Salt jobs at most once through the oduflow library and follows them.
Try it with no setup: oduflowctl demo

Commands:
`)
	names := make([]string, 0, len(cmds))
	for n := range cmds {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-10s %s\n", n, cmds[n].summary)
	}
	fmt.Fprint(w, `
Global flags (each also read from its environment variable; the eauth password is read only
from ODUFLOW_SALT_PASSWORD):
`)
	top.SetOutput(w)
	top.PrintDefaults()
	fmt.Fprint(w, `
Authentication: with --key-file the master's user key is used (run as the Salt service
account); otherwise --eauth/--user and ODUFLOW_SALT_PASSWORD are exchanged once for a token.

Every command has --help.

`+exitTable)
}
