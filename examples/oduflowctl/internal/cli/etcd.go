package cli

import (
	"context"
	stderrors "errors"
	"os"
	"strings"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/oduflow/oduflow-go/oduflow"
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
	return etcdSettings{user: getenv("ODUFLOW_ETCD_USER"), password: getenv("ODUFLOW_ETCD_PASSWORD"),
		caCert: getenv("ODUFLOW_ETCD_CACERT"), cert: getenv("ODUFLOW_ETCD_CERT"), key: getenv("ODUFLOW_ETCD_KEY")}
}

// env passes the settings on to a detached worker.
func (s etcdSettings) env() []string {
	return []string{"ODUFLOW_ETCD_USER=" + s.user, "ODUFLOW_ETCD_PASSWORD=" + s.password,
		"ODUFLOW_ETCD_CACERT=" + s.caCert, "ODUFLOW_ETCD_CERT=" + s.cert, "ODUFLOW_ETCD_KEY=" + s.key}
}

// etcdClaims reports whether --claims names an etcd store (etcd://HOST:PORT[,HOST:PORT...]/PREFIX, or
// etcds:// for TLS).
func (g *globals) etcdClaims() bool {
	return strings.HasPrefix(g.claims, "etcd://") || strings.HasPrefix(g.claims, "etcds://")
}

// etcdOptions turns --claims and the ODUFLOW_ETCD_* variables into store options (exit status 2 when they
// are malformed; the URL is never echoed).
func (g *globals) etcdOptions() ([]etcdstore.Option, error) {
	opts, err := etcdstore.ParseURL(g.claims)
	if err != nil {
		return nil, usagef("--claims: %s", oneLine(err.Error()))
	}
	s := g.etcd
	user, password := s.user, s.password
	if password == "" {
		if u, p, ok := strings.Cut(user, ":"); ok {
			user, password = u, p
		}
	}
	if password != "" && user == "" {
		return nil, usagef("ODUFLOW_ETCD_PASSWORD needs ODUFLOW_ETCD_USER")
	}
	if user != "" {
		opts = append(opts, etcdstore.WithAuth(user, password))
	}
	if s.caCert != "" || s.cert != "" || s.key != "" {
		if !strings.HasPrefix(g.claims, "etcds://") {
			return nil, usagef("ODUFLOW_ETCD_CACERT, ODUFLOW_ETCD_CERT and ODUFLOW_ETCD_KEY need --claims etcds://")
		}
		if (s.cert == "") != (s.key == "") {
			return nil, usagef("ODUFLOW_ETCD_CERT and ODUFLOW_ETCD_KEY go together")
		}
		opts = append(opts, etcdstore.WithTLSFiles(s.cert, s.key, s.caCert))
	}
	return opts, nil
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
	opts, err := e.g.etcdOptions()
	if err != nil {
		return nil, err
	}
	st, err := etcdstore.Open(ctx, opts...)
	if err == nil {
		return st, nil
	}
	msg := "etcd claim store: " + oneLine(err.Error())
	switch {
	case is(err, oduflow.ErrInvalidInput):
		return nil, usagef("%s", msg)
	case etcdRefused(err):
		return nil, &exitError{code: ExitRefused, msg: msg}
	case etcdUnreachable(err):
		return nil, unreachablef("%s", msg)
	}
	return nil, usagef("%s", msg) // TLS files that cannot be read or parsed
}

// etcdRefused: the cluster answered and refused the credentials or the permission to read the prefix.
func etcdRefused(err error) bool {
	if stderrors.Is(err, rpctypes.ErrAuthFailed) || stderrors.Is(err, rpctypes.ErrPermissionDenied) ||
		stderrors.Is(err, rpctypes.ErrGRPCAuthFailed) || stderrors.Is(err, rpctypes.ErrGRPCPermissionDenied) {
		return true
	}
	switch grpcCode(err) {
	case codes.Unauthenticated, codes.PermissionDenied:
		return true
	}
	return strings.Contains(err.Error(), rpctypes.ErrAuthFailed.Error())
}

// etcdUnreachable: no answer (no connection, timeout).
func etcdUnreachable(err error) bool {
	if stderrors.Is(err, context.DeadlineExceeded) || stderrors.Is(err, context.Canceled) {
		return true
	}
	switch grpcCode(err) {
	case codes.Unavailable, codes.DeadlineExceeded, codes.Canceled:
		return true
	}
	return false
}

func grpcCode(err error) codes.Code {
	for e := err; e != nil; e = stderrors.Unwrap(e) {
		if ee, ok := e.(rpctypes.EtcdError); ok {
			return ee.Code()
		}
		if st, ok := status.FromError(e); ok && st.Code() != codes.Unknown {
			return st.Code()
		}
	}
	return codes.Unknown
}

// openStateDir creates --state-dir (0700) when the claims live in etcd: the detached workers' log
// (worker.log) is still written there.
func openStateDir(dir string) error {
	if strings.TrimSpace(dir) == "" {
		return usagef("--state-dir: empty (it holds worker.log when the claims are in etcd)")
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return configf(err, "state dir %q", dir)
	}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return usagef("state dir %q is not a directory", dir)
	}
	return nil
}
