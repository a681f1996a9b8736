package service

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"log/slog"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/oduflow/oduflow-go/examples/internal/authfile"
	"github.com/oduflow/oduflow-go/examples/internal/oduflowenv"
	"github.com/oduflow/oduflow-go/oduflow"
	"github.com/oduflow/oduflow-go/oduflow/catalog"
	"github.com/oduflow/oduflow-go/oduflow/claims"
	"github.com/oduflow/oduflow-go/oduflow/etcdstore"
	"github.com/oduflow/oduflow-go/oduflow/filestore"
	"github.com/oduflow/oduflow-go/oduflow/prom"
	"github.com/oduflow/oduflow-go/profiles"
	"github.com/oduflow/oduflow-go/salt"
)

// Service is one controller replica: a Dispatcher with adoption on and its claim store, the metrics
// and the HTTP handler (Handler). Close drains it.
type Service struct {
	d        *oduflow.Dispatcher
	log      *slog.Logger
	registry *prometheus.Registry
	draining atomic.Bool
	closers  []func() error    // the Salt client, the etcd store: closed after the Dispatcher
	routes   func() []apiRoute // the API's route table, built once (apiRoutes)

	etcd    *etcdstore.Store
	store   claims.Store // the claim store (requestKey reads a caller's id in it)
	auth    *authenticator
	tls     *tls.Config // nil: plain HTTP
	limit   *inflightLimit
	audit   *slog.Logger
	cat     catalog.Store
	clients clientBindings
	table   *profiles.Table // ODUFLOW_PROFILES: the profiles the routes take and the minion id policy
	guards  *guardSeen      // the runtime-guard reasons the ping route saw, for /readyz
	ui      *console        // the operator console's sessions and pages (ui.go)

	limits   Limits          // the flood bounds in force (defaults applied)
	unauth   *sourceRate     // unauthenticated requests per source
	refusals *refusalCounter // unauthenticated refusals, counted per source and interval
}

// Option configures Open.
type Option func(*options)

type options struct {
	logger          *slog.Logger
	audit           *slog.Logger
	dispatch        []oduflow.Option
	timers          oduflow.Timers // WithTimers; else oduflow.DefaultTimers()
	noAdoption      bool           // tests: no adoption loop, so Dispatcher.Wait returns once the workers end
	refusalInterval time.Duration
}

// WithRefusalInterval sets the period of the refusal counts in the audit trail (default
// DefaultRefusalInterval).
func WithRefusalInterval(d time.Duration) Option { return func(o *options) { o.refusalInterval = d } }

// WithAuditLogger sets the audit trail's logger (one line per mutating call and per refusal). Default:
// the service's logger.
func WithAuditLogger(l *slog.Logger) Option { return func(o *options) { o.audit = l } }

// WithLogger sets the service's logger (the Dispatcher's and the Salt client's too). Default: discard.
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.logger = l } }

// WithTimers sets the dispatcher's timers (tests: short ones), and builds the claim store with their
// status windows (oduflow.New refuses a store whose windows are not its Timers'). Default:
// oduflow.DefaultTimers().
func WithTimers(t oduflow.Timers) Option { return func(o *options) { o.timers = t } }

// WithDispatcherOptions adds Dispatcher options after the service's own (hooks; timers: WithTimers).
func WithDispatcherOptions(opts ...oduflow.Option) Option {
	return func(o *options) { o.dispatch = append(o.dispatch, opts...) }
}

// Open connects what cfg names (the claim store first, so that a claim store that does not answer is
// refused before the Salt client exists) and builds the Dispatcher: adoption on (orphaned requests of
// any replica are taken over at start and every poll interval), in-process workers (a drain releases
// what it cuts for adoption), the Prometheus hooks. Nothing is published or written. A configuration
// error is an *oduflowenv.Error.
func Open(ctx context.Context, cfg Config, opts ...Option) (_ *Service, err error) {
	o := options{logger: slog.New(slog.NewTextHandler(io.Discard, nil)), timers: oduflow.DefaultTimers()}
	for _, opt := range opts {
		opt(&o)
	}
	if o.audit == nil {
		o.audit = o.logger
	}
	s := &Service{log: o.logger, audit: o.audit, registry: prometheus.NewRegistry(), limit: newInflightLimit(cfg.Auth.MaxInflight),
		guards: newGuardSeen(time.Now), limits: cfg.Limits.withDefaults()}
	s.unauth = newSourceRate(s.limits.UnauthenticatedPerSec, time.Now)
	s.routes = sync.OnceValue(s.routeTable)
	s.refusals = newRefusalCounter(o.audit, o.refusalInterval)
	defer func() {
		if err != nil {
			s.closeConnections()
		}
	}()
	cfg.Settings.EnvOnly = true // the controller has no flags: its messages name the variables
	if err := cfg.Settings.CheckMaster("controller", true); err != nil {
		return nil, err
	}
	listen := cfg.Listen
	if listen == "" {
		listen = DefaultListen
	}
	if err := cfg.Auth.Check(listen); err != nil {
		return nil, err
	}
	if s.auth, s.tls, err = loadAuth(ctx, cfg.Auth); err != nil {
		return nil, err
	}
	if s.table, err = cfg.Settings.Table(ctx); err != nil { // ODUFLOW_PROFILES: refused before anything starts
		return nil, err
	}
	s.ui = newConsole(cfg.Auth.TokensFile)
	if s.clients, err = loadClients(ctx, "ODUFLOW_CLIENTS", cfg.Auth.ClientsFile, s.table); err != nil {
		return nil, err
	}
	store, err := s.openClaims(ctx, cfg.Settings, o.timers)
	if err != nil {
		return nil, err
	}
	s.store = store
	if s.cat, err = s.openCatalog(ctx, cfg); err != nil {
		return nil, err
	}
	if err := cfg.Settings.CheckKeyFile(); err != nil {
		return nil, err // as oduflowctl would: refused before anything listens
	}
	client, closeClient, err := cfg.Settings.Client(ctx, salt.WithLogger(o.logger), salt.WithRequestTimeout(20*time.Second))
	if err != nil {
		return nil, err
	}
	s.closers = append(s.closers, closeClient)
	metrics := prom.New()
	if err := s.registry.Register(metrics); err != nil {
		return nil, err
	}
	all := []oduflow.Option{
		oduflow.WithProfiles(s.table),
		oduflow.WithClaimStore(store),
		oduflow.WithTimers(o.timers),
		oduflow.WithPKIDir(cfg.Settings.PKIDir),
		oduflow.WithLogger(o.logger),
		oduflow.WithHooks(withCreated(metrics.Hooks())),
		oduflow.WithCustomCatalog(s.cat),
	}
	if !o.noAdoption {
		all = append(all, oduflow.WithAdoption(0))
	}
	all = append(all, o.dispatch...)
	d, err := oduflow.New(client, oduflow.SaltEvents(cfg.Settings.Events, salt.WithLogger(o.logger)), all...)
	if err != nil {
		return nil, &oduflowenv.Error{Kind: oduflowenv.ErrUsage, Msg: "dispatcher: " + oduflowenv.OneLine(err.Error()), Cause: err}
	}
	s.d = d
	s.refusals.start()
	if cfg.Auth.Insecure {
		s.log.Warn("ODUFLOW_INSECURE_NO_AUTH=1: no authentication, every caller is an administrator of every company", "listen", listen)
	}
	return s, nil
}

// openClaims opens the claim store ODUFLOW_CLAIMS names: etcd (the state directory is created for
// this process's files) or a directory (ODUFLOW_STATE_DIR by default).
// openClaims opens the claim store with the status windows of t (the dispatcher's timers).
func (s *Service) openClaims(ctx context.Context, set oduflowenv.Settings, t oduflow.Timers) (claims.Store, error) {
	if set.EtcdClaims() {
		if err := oduflowenv.OpenStateDir(set.StateDir); err != nil {
			return nil, err
		}
		st, err := set.OpenEtcd(ctx, etcdstore.WithStatusWindows(t.LaunchGrace, t.StatusExpiry))
		if err != nil {
			return nil, err
		}
		s.closers = append(s.closers, st.Close)
		s.etcd = st
		return st, nil
	}
	dir, err := set.ClaimDir()
	if err != nil {
		return nil, err
	}
	return oduflowenv.OpenFileClaims(dir, filestore.WithStatusWindows(t.LaunchGrace, t.StatusExpiry))
}

// openCatalog opens the custom-state catalog: ODUFLOW_CATALOG_DIR, else the etcd claim store's catalog,
// else the directory "catalog" next to the claim directory (created 0700).
func (s *Service) openCatalog(ctx context.Context, cfg Config) (catalog.Store, error) {
	dir := cfg.CatalogDir
	if dir == "" && s.etcd != nil {
		return s.etcd.Catalog()
	}
	if dir == "" {
		claims, err := cfg.Settings.ClaimDir()
		if err != nil {
			return nil, err
		}
		dir = filepath.Join(filepath.Dir(filepath.Clean(claims)), "catalog")
	}
	// The catalog holds what runs as root on the clients: checked like every authority file.
	if err := authfile.CheckDir(ctx, "ODUFLOW_CATALOG_DIR", dir); err != nil {
		return nil, usageError(err.Error())
	}
	c, err := catalog.Open(dir, catalog.WithCreate())
	if err != nil {
		return nil, usageError("ODUFLOW_CATALOG_DIR: cannot open the catalog: " + scrubPaths(oduflowenv.OneLine(err.Error())))
	}
	return c, nil
}

// TLSConfig is the server's TLS configuration (ODUFLOW_TLS_*), nil when it serves plain HTTP.
func (s *Service) TLSConfig() *tls.Config {
	if s.tls == nil {
		return nil
	}
	return s.tls.Clone()
}

// Catalog is the service's custom-state catalog.
func (s *Service) Catalog() catalog.Store { return s.cat }

// Dispatcher is the service's Dispatcher.
func (s *Service) Dispatcher() *oduflow.Dispatcher { return s.d }

// Close drains: /readyz answers 503 at once, the Dispatcher stops admitting (a new start gets 503
// closed) and its in-flight workers finish until ctx ends; what is still running then is released for
// adoption by any replica (ctx's error is returned). The connections are closed last.
func (s *Service) Close(ctx context.Context) error {
	s.draining.Store(true)
	err := s.d.Close(ctx)
	s.refusals.close()
	return errors.Join(err, s.closeConnections())
}

func (s *Service) closeConnections() error {
	var errs []error
	for i := len(s.closers) - 1; i >= 0; i-- {
		errs = append(errs, s.closers[i]())
	}
	s.closers = nil
	return errors.Join(errs...)
}
