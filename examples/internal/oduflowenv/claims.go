package oduflowenv

import (
	"context"
	stderrors "errors"
	"os"
	"strings"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/oduflow/oduflow-go/oduflow/claims"
	"github.com/oduflow/oduflow-go/oduflow/etcdstore"
	"github.com/oduflow/oduflow-go/oduflow/filestore"
)

// ClaimDir is the claim store directory: Claims (file:DIR or a plain DIR) when set, else StateDir. It must
// be named and, when it exists, be a directory (ErrUsage otherwise).
func (s Settings) ClaimDir() (string, error) {
	dir := s.StateDir
	if s.Claims != "" {
		scheme, rest, ok := strings.Cut(s.Claims, ":")
		switch {
		case ok && scheme == "file":
			dir = rest
		case ok && (scheme == "etcd" || scheme == "etcds"):
			return "", usagef("%s: an etcd store is not a directory", s.name("--claims", "ODUFLOW_CLAIMS"))
		case ok && strings.HasPrefix(rest, "//"):
			return "", usagef("%s %q: unknown scheme %q: want file:DIR or DIR", s.name("--claims", "ODUFLOW_CLAIMS"), s.Claims, scheme)
		default:
			dir = s.Claims
		}
	}
	if strings.TrimSpace(dir) == "" {
		return "", usagef("%s: empty claim store directory", s.name("--state-dir/--claims", "ODUFLOW_STATE_DIR/ODUFLOW_CLAIMS"))
	}
	if st, err := os.Stat(dir); err == nil && !st.IsDir() {
		return "", usagef("claim store %q is not a directory", dir)
	}
	return dir, nil
}

// OpenFileClaims opens (creating it 0700) the file claim store in dir: for the commands that write a
// claim (start, custom start, init). opts: the store's status windows (filestore.WithStatusWindows) when
// the dispatcher's timers are not the defaults.
func OpenFileClaims(dir string, opts ...filestore.Option) (claims.Store, error) {
	store, err := filestore.Open(dir, opts...)
	if err != nil {
		return nil, configf(err, "claim store %q", dir)
	}
	return store, nil
}

// OpenExistingFileClaims opens the file claim store in dir for a command that only reads or follows
// claims (status, resume, reconcile): a missing directory is an error matching filestore.ErrNoStore
// (exit status 6, "damaged or missing claim store"), never a new empty store in which every request
// would read not_started.
func OpenExistingFileClaims(dir string, opts ...filestore.Option) (claims.Store, error) {
	store, err := filestore.OpenExisting(dir, opts...)
	if err != nil {
		if stderrors.Is(err, filestore.ErrNoStore) {
			return nil, err
		}
		return nil, configf(err, "claim store %q", dir)
	}
	return store, nil
}

// OpenStateDir creates the state directory (0700) when the claims live in etcd: a process's own files
// (the detached workers' log) are still written there.
func OpenStateDir(dir string) error {
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

// EtcdOptions turns Claims and the ODUFLOW_ETCD_* variables into store options (ErrUsage when they are
// malformed; the URL is never echoed).
func (s Settings) EtcdOptions() ([]etcdstore.Option, error) {
	opts, err := etcdstore.ParseURL(s.Claims)
	if err != nil {
		return nil, usagef("%s: %s", s.name("--claims", "ODUFLOW_CLAIMS"), OneLine(err.Error()))
	}
	e := s.Etcd
	user, password := e.User, e.Password
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
	if e.CACert != "" || e.Cert != "" || e.Key != "" {
		if !strings.HasPrefix(s.Claims, "etcds://") {
			return nil, usagef("ODUFLOW_ETCD_CACERT, ODUFLOW_ETCD_CERT and ODUFLOW_ETCD_KEY need --claims etcds://")
		}
		if (e.Cert == "") != (e.Key == "") {
			return nil, usagef("ODUFLOW_ETCD_CERT and ODUFLOW_ETCD_KEY go together")
		}
		opts = append(opts, etcdstore.WithTLSFiles(e.Cert, e.Key, e.CACert))
	}
	return opts, nil
}

// OpenEtcd opens the etcd claim store. Nothing is written yet, so an etcd that does not answer is
// ErrUnreachable, refused credentials ErrRefused, and unreadable TLS files or bad settings ErrUsage.
// extra are added after the settings' own (etcdstore.WithStatusWindows when the dispatcher's timers
// are not the defaults).
func (s Settings) OpenEtcd(ctx context.Context, extra ...etcdstore.Option) (*etcdstore.Store, error) {
	opts, err := s.EtcdOptions()
	if err != nil {
		return nil, err
	}
	st, err := etcdstore.Open(ctx, append(opts, extra...)...)
	if err == nil {
		return st, nil
	}
	msg := "etcd claim store: " + OneLine(err.Error())
	switch {
	case stderrors.Is(err, claims.ErrInvalidInput): // errmark-marked: the standard library sees it
		return nil, &Error{Kind: ErrUsage, Msg: msg, Cause: err}
	case etcdRefused(err):
		return nil, &Error{Kind: ErrRefused, Msg: msg, Cause: err}
	case etcdUnreachable(err):
		return nil, &Error{Kind: ErrUnreachable, Msg: msg, Cause: err}
	}
	return nil, &Error{Kind: ErrUsage, Msg: msg, Cause: err} // TLS files that cannot be read or parsed
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
