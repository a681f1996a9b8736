package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/oduflow/oduflow-go/examples/oduflowctl/internal/cli"
)

func main() {
	// A detached worker started by `start` is this same binary: run it and exit.
	if handled, code := cli.RunWorkerIfRequested(context.Background()); handled {
		os.Exit(code)
	}
	// SIGINT and SIGTERM cancel the command's context: it stops where it is (nothing more is written) and
	// exits. Should it not return within a grace period (an I/O call that ignores its context), it exits
	// anyway with status 5 (the outcome of what it was doing is not proven); a second signal kills it.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		<-ctx.Done()
		stop() // a second signal has its default effect
		time.Sleep(5 * time.Second)
		fmt.Fprintln(os.Stderr, "oduflowctl: interrupted; exiting (outcome not proven: check with oduflowctl status)")
		os.Exit(cli.ExitUnknown)
	}()
	code := cli.Run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
