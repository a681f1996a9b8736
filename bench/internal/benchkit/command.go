package benchkit

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
)

// Command is one sub-command: it parses its own flags from args and returns the round's result, which
// Main prints as one JSON line (nil: nothing is printed, as for a child process's sub-command).
type Command func(ctx context.Context, args []string) (any, error)

// Main runs the sub-command named by os.Args[1] with the rest of the arguments, under a context that
// SIGINT and SIGTERM cancel, prints its result as one JSON line on stdout and exits: 2 for a missing or
// unknown sub-command, 1 for a failed one (its error on stderr, prefixed by name).
func Main(name, usage string, cmds map[string]Command) {
	os.Exit(run(name, usage, cmds, os.Args[1:], os.Stdout, os.Stderr))
}

func run(name, usage string, cmds map[string]Command, args []string, stdout, stderr io.Writer) int {
	if len(args) < 1 {
		fmt.Fprintln(stderr, "usage:", usage)
		return 2
	}
	f, ok := cmds[args[0]]
	if !ok {
		fmt.Fprintln(stderr, name+": unknown sub-command", args[0])
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	res, err := f(ctx, args[1:])
	if err != nil {
		fmt.Fprintln(stderr, name+":", args[0]+":", err)
		return 1
	}
	if res == nil {
		return 0
	}
	out, err := json.Marshal(res)
	if err != nil {
		fmt.Fprintln(stderr, name+":", err)
		return 1
	}
	fmt.Fprintln(stdout, string(out))
	return 0
}

// Discard is a logger that drops everything: the measured code logs nothing into the figures.
func Discard() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }
