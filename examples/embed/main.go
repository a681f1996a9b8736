package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "embed:", err)
		os.Exit(1)
	}
}

func env(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

func run(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("embed", flag.ContinueOnError)
	cfg := Config{}
	fs.StringVar(&cfg.Master, "master", env("ODUFLOW_SALT_MASTER", "tcp://127.0.0.1:4506"), "master request port (ODUFLOW_SALT_MASTER)")
	fs.StringVar(&cfg.Events, "events", env("ODUFLOW_SALT_EVENTS", "unix:///var/run/salt/master/master_event_pub.ipc"), "master event bus (ODUFLOW_SALT_EVENTS)")
	fs.StringVar(&cfg.KeyFile, "key-file", env("ODUFLOW_SALT_KEY_FILE", ""), "master user key file (ODUFLOW_SALT_KEY_FILE); else eauth")
	fs.StringVar(&cfg.Eauth, "eauth", env("ODUFLOW_SALT_EAUTH", ""), "eauth backend (ODUFLOW_SALT_EAUTH); password from ODUFLOW_SALT_PASSWORD")
	fs.StringVar(&cfg.User, "user", env("ODUFLOW_SALT_USER", ""), "eauth user (ODUFLOW_SALT_USER)")
	fs.StringVar(&cfg.StateDir, "state-dir", env("ODUFLOW_STATE_DIR", "/var/cache/salt/oduflow-apply"), "claim directory (ODUFLOW_STATE_DIR)")
	fs.StringVar(&cfg.CatalogDir, "catalog-dir", env("ODUFLOW_CATALOG_DIR", "/var/cache/salt/oduflow-catalog"), "custom state catalog (ODUFLOW_CATALOG_DIR)")
	servers := fs.String("servers", env("ODUFLOW_EMBED_SERVERS", ""), `JSON file {"client-<uuid>": "company", ...} (ODUFLOW_EMBED_SERVERS)`)
	listen := fs.String("listen", env("ODUFLOW_EMBED_LISTEN", "127.0.0.1:8080"), "listen address (ODUFLOW_EMBED_LISTEN)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	cfg.Password = os.Getenv("ODUFLOW_SALT_PASSWORD")
	if *servers == "" {
		return errors.New("--servers is required")
	}
	data, err := os.ReadFile(*servers)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(data, &cfg.Servers); err != nil {
		return fmt.Errorf("--servers %s: %w", *servers, err)
	}
	log := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	svc, closeAll, err := Wire(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer closeAll()
	srv := &http.Server{Addr: *listen, Handler: svc.Handler(), ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.ListenAndServe() }()
	log.Info("listening", slog.String("addr", *listen), slog.Int("servers", len(cfg.Servers)))
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return srv.Shutdown(shutdown)
}
