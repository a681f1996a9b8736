package main

import (
	"context"
	"crypto/tls"
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
	if len(os.Args) > 1 {
		os.Exit(usage(os.Args[1:], os.Stdout, os.Stderr))
	}
	os.Exit(run(ctx, os.Getenv, os.Stderr))
}

// usageText is the help: the service takes no arguments, only the environment.
const usageText = `Usage: oduflow-controller

The oduflow HTTP controller service. It takes no arguments; it is configured by the environment:
  ODUFLOW_SALT_MASTER, ODUFLOW_SALT_EVENTS      master request port and event bus
  ODUFLOW_SALT_KEY_FILE                         master user key (or ODUFLOW_SALT_EAUTH, _USER, _PASSWORD)
  ODUFLOW_SALT_PKI_DIR                          the master's pki_dir (receipt proofs)
  ODUFLOW_CLAIMS, ODUFLOW_STATE_DIR             claim store: a directory, or etcd://HOST:PORT/PREFIX
  ODUFLOW_ETCD_USER, _PASSWORD, _CACERT, _CERT, _KEY
  ODUFLOW_LISTEN                                host:port (default 127.0.0.1:8080)
  ODUFLOW_DRAIN_TIMEOUT                         SIGTERM drain bound (default 25s)
  ODUFLOW_LOG_FORMAT, ODUFLOW_DEBUG             text or json logs on stderr; debug level
  ODUFLOW_AUTH_TOKENS                           bearer tokens: NAME ROLE COMPANY[,...] SHA256HEX per line, mode 0600
  ODUFLOW_TLS_CERT, ODUFLOW_TLS_KEY             serve HTTPS with this certificate and key
  ODUFLOW_TLS_CLIENT_CA, ODUFLOW_TLS_PRINCIPALS require client certificates of this CA; CommonName -> NAME ROLE COMPANIES
  ODUFLOW_CLIENTS                               MINION COMPANY per line: the company of each client
  ODUFLOW_CATALOG_DIR                           custom-state catalog (default: "catalog" next to the claims)
  ODUFLOW_MAX_INFLIGHT_PER_PRINCIPAL            requests in progress per principal (default 16; more: 429)
  ODUFLOW_MAX_CONNECTIONS                       open connections (default 1024, at most the descriptor limit - 64)
  ODUFLOW_MAX_CONNECTIONS_PER_SOURCE            open connections per source address (default 64)
  ODUFLOW_MAX_UNAUTHENTICATED_PER_SOURCE        unauthenticated requests per second per source (default 10; more: 429)
  ODUFLOW_INSECURE_NO_AUTH=1                    no authentication, loopback ODUFLOW_LISTEN only

API (README.md): /v1/requests/..., /v1/minions/{minion}/ping, /v1/custom-states/...,
/v1/minions/{minion}/custom-states/..., /v1/unresolved, /healthz, /readyz (open), /metrics.
Exit status: 0 after a drain, 2 bad configuration, 3 claim store unreachable, 4 credentials refused.
`

// usage answers -h/--help (exit 0) or refuses any other argument (exit 2).
func usage(args []string, stdout, stderr io.Writer) int {
	if len(args) == 1 && (args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
		fmt.Fprint(stdout, usageText)
		return oduflowenv.ExitOK
	}
	fmt.Fprintf(stderr, "oduflow-controller: unexpected argument %q: it is configured by the environment (see --help)\n", args[0])
	return oduflowenv.ExitUsage
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
	audit := slog.New(slog.NewJSONHandler(stderr, nil)).With("logger", "audit")
	svc, err := service.Open(openCtx, cfg, service.WithLogger(log), service.WithAuditLogger(audit))
	cancel()
	if err != nil {
		_ = ln.Close()
		log.Error("cannot start", "error", oduflowenv.OneLine(err.Error()))
		return exitStatus(err)
	}
	srv := &http.Server{Handler: svc.Handler(), ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second, MaxHeaderBytes: 64 << 10,
		IdleTimeout: 60 * time.Second, ErrorLog: svc.ServerErrorLog()}
	scheme := "http"
	ln = svc.Listener(ln) // connection bounds, before TLS
	if tc := svc.TLSConfig(); tc != nil {
		ln, scheme = tls.NewListener(ln, tc), "https"
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	log.Info("serving", "listen", ln.Addr().String(), "scheme", scheme, "claims", claimsKind(cfg.Settings),
		"drain_timeout", cfg.DrainTimeout.String())

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
