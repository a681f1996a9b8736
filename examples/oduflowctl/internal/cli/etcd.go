package cli

import (
	"context"
	stderrors "errors"

	"github.com/oduflow/oduflow-go/examples/internal/oduflowenv"
	"github.com/oduflow/oduflow-go/oduflow/etcdstore"
)

// etcdSettings are the etcd claim store's credentials and TLS files, from the environment only (never
// flags, so that they stay out of process lists), named as etcdctl users expect (ETCDCTL_USER, ...).
type etcdSettings struct {
	user     string // ODUFLOW_ETCD_USER: "name" or, as etcdctl's --user, "name:password"
	password string // ODUFLOW_ETCD_PASSWORD
	caCert   string // ODUFLOW_ETCD_CACERT
	cert     string // ODUFLOW_ETCD_CERT
	key      string // ODUFLOW_ETCD_KEY
}

func etcdFromEnv(getenv func(string) string) etcdSettings {
	s := oduflowenv.EtcdFromEnv(getenv)
	return etcdSettings{user: s.User, password: s.Password, caCert: s.CACert, cert: s.Cert, key: s.Key}
}

// env passes the settings on to a detached worker.
func (s etcdSettings) env() []string {
	return oduflowenv.Etcd{User: s.user, Password: s.password, CACert: s.caCert, Cert: s.cert, Key: s.key}.Env()
}

// etcdClaims reports whether --claims names an etcd store (etcd://HOST:PORT[,HOST:PORT...]/PREFIX, or
// etcds:// for TLS).
func (g *globals) etcdClaims() bool { return g.settings().EtcdClaims() }

// etcdOptions turns --claims and the ODUFLOW_ETCD_* variables into store options (exit status 2 when they
// are malformed; the URL is never echoed).
func (g *globals) etcdOptions() ([]etcdstore.Option, error) {
	opts, err := g.settings().EtcdOptions()
	return opts, fromEnv(err)
}

// etcdStore returns the command's etcd store, opened once (see openEtcd): the claims and the custom
// catalog share it, and it is closed when the command ends.
func (e *env) etcdStore(ctx context.Context) (*etcdstore.Store, error) {
	if e.etcd != nil {
		return e.etcd, nil
	}
	st, err := e.openEtcd(ctx)
	if err != nil {
		return nil, err
	}
	e.closers = append(e.closers, st.Close)
	e.etcd = st
	return st, nil
}

// openEtcd opens the etcd claim store. Nothing is written yet, so an etcd that does not answer is exit
// status 3, refused credentials 4, and unreadable TLS files or bad settings 2.
func (e *env) openEtcd(ctx context.Context) (*etcdstore.Store, error) {
	st, err := e.g.settings().OpenEtcd(ctx)
	return st, fromEnv(err)
}

// openStateDir creates --state-dir (0700) when the claims live in etcd: the detached workers' log
// (worker.log) is still written there.
func openStateDir(dir string) error { return fromEnv(oduflowenv.OpenStateDir(dir)) }

// fromEnv turns a configuration error of the shared settings into the CLI's exit status and message (the
// controller maps the same errors to HTTP answers).
func fromEnv(err error) error {
	var ce *oduflowenv.Error
	if !stderrors.As(err, &ce) {
		return err
	}
	code := ExitUsage
	switch {
	case stderrors.Is(ce.Kind, oduflowenv.ErrUnreachable):
		code = ExitUnreachable
	case stderrors.Is(ce.Kind, oduflowenv.ErrRefused):
		code = ExitRefused
	}
	return &exitError{code: code, msg: ce.Msg}
}
