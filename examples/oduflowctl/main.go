package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/oduflow/oduflow-go/examples/oduflowctl/internal/cli"
)

func main() {
	// A detached worker started by `start` is this same binary: run it and exit.
	if handled, code := cli.RunWorkerIfRequested(context.Background()); handled {
		os.Exit(code)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
