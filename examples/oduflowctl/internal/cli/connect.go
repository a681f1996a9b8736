package cli

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/oduflow/oduflow-go/examples/internal/oduflowenv"
	"github.com/oduflow/oduflow-go/oduflow"
	"github.com/oduflow/oduflow-go/oduflow/catalog"
	"github.com/oduflow/oduflow-go/oduflow/claims"
	"github.com/oduflow/oduflow-go/salt"
)

// keyUser derives the Salt user from a key file name: ".root_key" -> "root".
func keyUser(keyFile string) string { return oduflowenv.KeyUser(keyFile) }

// needMaster checks that the master and the event bus are named.
func (g *globals) needMaster(cmd string, events bool) error {
	return fromEnv(g.settings().CheckMaster(cmd, events))
}

// checkEvents checks that the event bus is named, as a unix or tcp address.
func (g *globals) checkEvents(cmd string) error { return fromEnv(g.settings().CheckEvents(cmd)) }

// logger returns the CLI's logger: errors on stderr (everything with ODUFLOW_DEBUG set),
// never secrets (the library logs none).
func (e *env) logger() *slog.Logger {
	level := slog.LevelError
	if e.getenv("ODUFLOW_DEBUG") != "" {
		level = slog.LevelDebug
	}
	return slog.New(slog.NewTextHandler(e.stderr, &slog.HandlerOptions{Level: level}))
}

// client opens a Salt client with the configured authentication: the user key when a key
// file is named (preferred: nothing secret is published), else an eauth token obtained once
// from the password. A client that cannot be built (a malformed address) is a configuration error.
// It is closed when the command ends.
func (e *env) client(ctx context.Context) (*salt.Client, error) {
	c, closeAll, err := e.g.settings().Client(ctx, salt.WithLogger(e.logger()), salt.WithRequestTimeout(20*time.Second))
	if err != nil {
		return nil, fromEnv(err)
	}
	e.closers = append(e.closers, closeAll)
	return c, nil
}

// dispatcher builds a Dispatcher whose workers run detached (this binary, re-executed), so
// that a request goes on after the command exits. It and its client are closed when the
// command ends. The claim store and the worker log are opened here, before any claim can be
// written: a bad directory or log path is a configuration error (exit status 2), an etcd store
// that does not answer exit status 3, with nothing written.
func (e *env) dispatcher(ctx context.Context, opts ...oduflow.Option) (*oduflow.Dispatcher, error) {
	faults, err := e.faultOptions() // none unless built with the faultinject tag
	if err != nil {
		return nil, err
	}
	opts = append(opts, faults...)
	store, logDir, err := e.claimStore(ctx)
	if err != nil {
		return nil, err
	}
	c, err := e.client(ctx)
	if err != nil {
		return nil, err
	}
	e.salt = c
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	table, err := e.table()
	if err != nil {
		return nil, err
	}
	all := []oduflow.Option{
		oduflow.WithProfiles(table),
		oduflow.WithClaimStore(store),
		oduflow.WithPKIDir(e.g.pkiDir),
		oduflow.WithLogger(e.logger()),
		oduflow.WithDetachedWorkers(exe, e.g.childEnv()...),
	}
	if !e.worker {
		// The worker's output goes to a private log in the claim directory (--state-dir when the
		// claims are in etcd), never to this command's stdout/stderr (a pipeline such as
		// `oduflowctl start ... 2>&1 | tee log` ends with the command). A worker process launches
		// no worker, so only launchers open it. New opens it (and Close closes it): a bad log path
		// is a configuration error before any claim.
		all = append(all, oduflow.WithWorkerLog(filepath.Join(logDir, "worker.log")))
	}
	d, err := oduflow.New(c, oduflow.SaltEvents(e.g.events, salt.WithLogger(e.logger())), append(all, opts...)...)
	if err != nil {
		return nil, configf(err, "dispatcher")
	}
	var once sync.Once
	e.closers = append(e.closers, func() error {
		once.Do(func() {
			// A command's own waits are over when it closes: stop at once (a detached worker goes on).
			now, cancel := context.WithCancel(context.Background())
			cancel()
			_ = d.Close(now)
		})
		return nil
	})
	e.disp = d
	return d, nil
}

// claimStore opens the claim store --claims names (etcd, or a directory, by default --state-dir) and
// returns it with the directory that holds the detached workers' log. It is closed when the command
// ends.
func (e *env) claimStore(ctx context.Context) (claims.Store, string, error) {
	if e.g.etcdClaims() {
		if err := openStateDir(e.g.stateDir); err != nil {
			return nil, "", err
		}
		st, err := e.etcdStore(ctx)
		if err != nil {
			return nil, "", err
		}
		return st, e.g.stateDir, nil
	}
	dir, err := e.g.claimDir()
	if err != nil {
		return nil, "", err
	}
	e.g.stateDir = dir // the effective claim store, also for the detached worker (childEnv)
	e.g.claims = ""
	// The claim store first (a command that writes a claim creates the directory 0700; one that only
	// reads or follows claims refuses a missing one), then the log inside it.
	open := oduflowenv.OpenFileClaims
	if !e.createStore {
		open = oduflowenv.OpenExistingFileClaims
	}
	store, err := open(dir)
	if err != nil {
		return nil, "", fromEnv(err)
	}
	return store, dir, nil
}

// printerAndDispatcher returns the command's printer, then its dispatcher (see dispatcher):
// a bad --output is reported before anything is opened.
func (e *env) printerAndDispatcher(opts ...oduflow.Option) (*printer, *oduflow.Dispatcher, error) {
	p, err := e.printer()
	if err != nil {
		return nil, nil, err
	}
	d, err := e.dispatcher(e.ctx, opts...)
	if err != nil {
		return nil, nil, err
	}
	return p, d, nil
}

// probe checks that the master answers at all (the unauthenticated ping command, which
// publishes nothing), so that start can report an unreachable master (exit status 3) before
// it writes a claim.
func (e *env) probe(ctx context.Context, cmd string) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := e.salt.Ping(ctx); err != nil {
		return unreachablef("%s: cannot reach the master at %s: %v", cmd, e.g.master, oneLine(err.Error()))
	}
	return nil
}

// probeUnlessClaimed probes the master (see probe) unless the request already has a claim: a
// repeated start answers from its claim even while the master or the bus is down.
func (e *env) probeUnlessClaimed(d *oduflow.Dispatcher, cmd, minion, request string) error {
	if _, err := d.Lookup(e.ctx, minion, request); err == nil || errors.Is(err, oduflow.ErrMismatch) {
		return nil // a claim exists (bound to this minion or another): the dispatcher answers from it
	}
	return e.probe(e.ctx, cmd)
}

// workerCatalogDir is ODUFLOW_CATALOG_DIR for a detached worker: the file catalog's directory, or ""
// when the catalog is in etcd (so that the worker opens the etcd catalog too).
func (g *globals) workerCatalogDir() string {
	if g.etcdCatalog() {
		return ""
	}
	return g.catalogDir()
}

// childEnv passes the effective settings (flags included) to a detached worker.
func (g *globals) childEnv() []string {
	env := []string{
		"ODUFLOW_SALT_MASTER=" + g.master,
		"ODUFLOW_SALT_EVENTS=" + g.events,
		"ODUFLOW_SALT_KEY_FILE=" + g.keyFile,
		"ODUFLOW_SALT_EAUTH=" + g.eauth,
		"ODUFLOW_SALT_USER=" + g.user,
		"ODUFLOW_STATE_DIR=" + g.stateDir,
		"ODUFLOW_SALT_PKI_DIR=" + g.pkiDir,
		// The file catalog's directory, unless the catalog is in etcd (then it stays unset).
		"ODUFLOW_CATALOG_DIR=" + g.workerCatalogDir(),
		// A claim directory was resolved into ODUFLOW_STATE_DIR; an etcd URL goes as it is, with its
		// credentials and TLS files (never on the command line).
		"ODUFLOW_CLAIMS=" + g.claims,
		// The profile table: the worker checks the persisted role and the minion's table digest with it.
		"ODUFLOW_PROFILES=" + g.profiles,
	}
	if g.etcdClaims() {
		env = append(env, g.etcd.env()...)
	}
	if g.password != "" {
		env = append(env, "ODUFLOW_SALT_PASSWORD="+g.password)
	}
	return env
}

// RunWorkerIfRequested is the detached-worker entry: when this process was started by a
// Dispatcher as a detached worker, it rebuilds the Dispatcher from the environment the
// launcher passed (see childEnv), runs the worker and reports handled=true with the exit
// status. Otherwise it does nothing. Call it first thing in main.
func RunWorkerIfRequested(ctx context.Context) (handled bool, code int) {
	e := &env{ctx: ctx, g: globalsFromEnv(os.Getenv), stdout: io.Discard, stderr: os.Stderr, getenv: os.Getenv, worker: true}
	defer func() {
		for i := len(e.closers) - 1; i >= 0; i-- {
			_ = e.closers[i]()
		}
	}()
	handled, err := oduflow.RunWorkerIfRequested(ctx, func() (*oduflow.Dispatcher, error) {
		// The catalog serves the frozen payload of custom claims (custom start created it);
		// fixed profiles do not need it. In etcd it is the claims' own store.
		if e.g.etcdCatalog() {
			cat, err := e.openCatalog()
			if err != nil {
				return nil, err
			}
			return e.dispatcher(ctx, oduflow.WithCustomCatalog(cat))
		}
		if _, err := os.Stat(e.g.catalogDir()); err != nil {
			return e.dispatcher(ctx)
		}
		cat, err := catalog.Open(e.g.catalogDir())
		if err != nil {
			return nil, err
		}
		return e.dispatcher(ctx, oduflow.WithCustomCatalog(cat))
	})
	if !handled {
		return false, 0
	}
	if err != nil {
		e.logger().Error("oduflowctl worker", "error", err.Error())
		return handled, ExitFailed
	}
	return handled, ExitOK
}
