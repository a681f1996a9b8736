package main

import (
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"time"

	"github.com/cockroachdb/errors"

	"github.com/oduflow/oduflow-go/oduflow"
	"github.com/oduflow/oduflow-go/oduflow/catalog"
	"github.com/oduflow/oduflow-go/salt"
)

// drainTimeout bounds the dispatcher's drain when the service closes (Close): what is still in flight
// then is released for adoption by another replica.
const drainTimeout = 30 * time.Second

// Config is what the service needs to reach the master and keep its records.
type Config struct {
	Master  string // tcp://127.0.0.1:4506
	Events  string // unix:///var/run/salt/master/master_event_pub.ipc
	KeyFile string // user-key auth when set; otherwise eauth
	Eauth   string // eauth backend, e.g. pam
	User    string
	// Password is exchanged once for a token (salt.NewTokenSource) and never logged.
	Password   string
	StateDir   string            // the claim directory (0700)
	CatalogDir string            // custom definitions, assignments, execution snapshots (0700)
	Servers    map[string]string // minion id -> company
	// PKIDir is the master's pki_dir (accepted minion keys, for receipt proofs); "" is Salt's default.
	PKIDir string
	// Timers overrides the dispatcher's timers (tests); nil keeps the production values.
	Timers *oduflow.Timers
}

// keyUser derives the Salt user from a key file name: ".root_key" -> "root".
func keyUser(keyFile string) string {
	base := filepath.Base(keyFile)
	if name, ok := strings.CutPrefix(base, "."); ok {
		if user, ok := strings.CutSuffix(name, "_key"); ok && user != "" {
			return user
		}
	}
	return "root"
}

// Wire builds the service: Salt client (token or user key), dispatcher, catalog. close
// releases everything; in-process workers are stopped (their claims stay; Status reports them
// by the rules).
func Wire(ctx context.Context, cfg Config, log *slog.Logger) (svc *Service, closeAll func(), err error) {
	var closers []func() error
	closeAll = func() {
		for i := len(closers) - 1; i >= 0; i-- {
			_ = closers[i]()
		}
	}
	defer func() {
		if err != nil {
			closeAll()
		}
	}()
	opts := []salt.Option{salt.WithLogger(log), salt.WithRequestTimeout(30 * time.Second)}
	var auth salt.Auth
	switch {
	case cfg.KeyFile != "":
		auth = salt.UserKey(keyUser(cfg.KeyFile), cfg.KeyFile)
	case cfg.Eauth != "" && cfg.User != "" && cfg.Password != "":
		// The token source asks the master for a token once (mk_token) and renews it before it
		// expires; publications carry the token, not the password.
		base, err := salt.NewClient(cfg.Master, opts...)
		if err != nil {
			return nil, nil, err
		}
		closers = append(closers, base.Close)
		ts := salt.NewTokenSource(base, cfg.Eauth, cfg.User, cfg.Password)
		if _, err := ts.Token(ctx); err != nil {
			return nil, nil, errors.Wrap(err, "embed: obtain an eauth token")
		}
		auth = salt.TokenAuth(ts)
	default:
		return nil, nil, errors.New("embed: set a key file, or eauth backend, user and password")
	}
	client, err := salt.NewClient(cfg.Master, append(opts, salt.WithAuth(auth))...)
	if err != nil {
		return nil, nil, err
	}
	closers = append(closers, client.Close)
	cat, err := catalog.Open(cfg.CatalogDir, catalog.WithCreate())
	if err != nil {
		return nil, nil, errors.Wrap(err, "embed: open the catalog")
	}
	dopts := []oduflow.Option{oduflow.WithClaimDir(cfg.StateDir), oduflow.WithLogger(log),
		oduflow.WithCustomCatalog(cat)}
	if cfg.PKIDir != "" {
		dopts = append(dopts, oduflow.WithPKIDir(cfg.PKIDir))
	}
	if cfg.Timers != nil {
		dopts = append(dopts, oduflow.WithTimers(*cfg.Timers))
	}
	d, err := oduflow.New(client, oduflow.SaltEvents(cfg.Events, salt.WithLogger(log)), dopts...)
	if err != nil {
		return nil, nil, err
	}
	closers = append(closers, func() error {
		// Drain: in-flight requests finish, or are released for adoption after drainTimeout.
		ctx, cancel := context.WithTimeout(context.Background(), drainTimeout)
		defer cancel()
		return d.Close(ctx)
	})
	return NewService(d, cat, cfg.Servers, log), closeAll, nil
}
