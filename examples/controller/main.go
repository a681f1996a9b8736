package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/oduflow/oduflow-go/examples/controller/internal/service"
	"github.com/oduflow/oduflow-go/examples/internal/oduflowenv"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	os.Exit(run(ctx, os.Getenv, os.Stderr))
}

// run is the whole program: it serves until ctx ends (the signal), then drains, and returns the exit
// status.
func run(ctx context.Context, getenv func(string) string, stderr io.Writer) int {
	log, err := newLogger(getenv, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "controller: %v\n", err)
		return oduflowenv.ExitUsage
	}
	cfg, err := service.ConfigFromEnv(getenv)
	if err != nil {
		log.Error("configuration refused", "error", err.Error())
		return exitStatus(err)
	}
	// Listen before connecting: a port in use is refused before anything is opened.
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		log.Error("cannot listen", "listen", cfg.Listen, "error", oduflowenv.OneLine(err.Error()))
		return oduflowenv.ExitUsage
	}
	openCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	svc, err := service.Open(openCtx, cfg, service.WithLogger(log))
	cancel()
	if err != nil {
		_ = ln.Close()
		log.Error("cannot start", "error", oduflowenv.OneLine(err.Error()))
		return exitStatus(err)
	}
	srv := &http.Server{Handler: svc.Handler(), ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second,
		IdleTimeout: 60 * time.Second, ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	log.Info("serving", "listen", ln.Addr().String(), "claims", claimsKind(cfg.Settings), "drain_timeout", cfg.DrainTimeout.String())

	select {
	case <-ctx.Done():
	case err := <-served:
		log.Error("server stopped", "error", oduflowenv.OneLine(err.Error()))
	}
	return drain(srv, svc, cfg.DrainTimeout, log)
}

// drain stops accepting connections, lets the HTTP requests in progress finish, then closes the
// Dispatcher, all within timeout. Requests cut by the timeout stay adoptable: still exit 0.
func drain(srv *http.Server, svc *service.Service, timeout time.Duration, log *slog.Logger) int {
	t0 := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	log.Info("draining", "timeout", timeout.String())
	if err := srv.Shutdown(ctx); err != nil {
		log.Warn("http shutdown cut", "error", oduflowenv.OneLine(err.Error()))
	}
	if err := svc.Close(ctx); err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			log.Warn("drain timeout: requests still running are released for adoption", "elapsed", time.Since(t0).Round(time.Millisecond).String())
		} else {
			log.Error("close", "error", oduflowenv.OneLine(err.Error()))
		}
	}
	log.Info("drained", "elapsed", time.Since(t0).Round(time.Millisecond).String())
	return oduflowenv.ExitOK
}

// exitStatus is oduflowctl's exit status for a configuration or connection error.
func exitStatus(err error) int {
	var ce *oduflowenv.Error
	if errors.As(err, &ce) {
		switch {
		case errors.Is(ce.Kind, oduflowenv.ErrUnreachable):
			return oduflowenv.ExitUnreachable
		case errors.Is(ce.Kind, oduflowenv.ErrRefused):
			return oduflowenv.ExitRefused
		}
	}
	return oduflowenv.ExitUsage
}

func claimsKind(s oduflowenv.Settings) string {
	if s.EtcdClaims() {
		return "etcd"
	}
	return "file"
}

// newLogger is the process's logger on stderr: text or JSON (ODUFLOW_LOG_FORMAT), info level or debug
// (ODUFLOW_DEBUG). The library's errors render as one line in either.
func newLogger(getenv func(string) string, w io.Writer) (*slog.Logger, error) {
	opts := &slog.HandlerOptions{Level: slog.LevelInfo}
	if getenv("ODUFLOW_DEBUG") != "" {
		opts.Level = slog.LevelDebug
	}
	switch f := getenv("ODUFLOW_LOG_FORMAT"); f {
	case "", "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	default:
		return nil, fmt.Errorf("ODUFLOW_LOG_FORMAT %q: want text or json", f)
	}
}
