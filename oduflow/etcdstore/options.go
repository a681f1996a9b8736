package etcdstore

import (
	"crypto/tls"
	"crypto/x509"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/cockroachdb/errors"
	"go.uber.org/zap"

	"github.com/oduflow/oduflow-go/internal/errmark"
	"github.com/oduflow/oduflow-go/oduflow/claims"
)

// Defaults.
const (
	// DefaultPrefix is the key prefix when neither WithPrefix nor the URL's path name one.
	DefaultPrefix = "/oduflow"
	// DefaultTTL is the TTL of the etcd lease behind each request lock and client lease: how long a lock
	// outlives a holder that died or lost contact with the cluster.
	DefaultTTL = 15 * time.Second
	// DefaultDialTimeout bounds the first connection made by Open.
	DefaultDialTimeout = 5 * time.Second
	// DefaultRequestTimeout bounds the calls that take no context (Lease.Release).
	DefaultRequestTimeout = 5 * time.Second
)

// Option configures Open.
type Option func(*config)

type config struct {
	endpoints   []string
	prefix      string
	ttl         time.Duration
	dialTimeout time.Duration
	reqTimeout  time.Duration
	tls         *tls.Config
	certFile    string
	keyFile     string
	caFile      string
	useTLS      bool
	username    string
	password    string
	logger      *zap.Logger
	// grace, expiry: the status windows (WithStatusWindows).
	grace, expiry time.Duration
}

// WithEndpoints sets the cluster's client URLs ("host:port" or "https://host:port").
func WithEndpoints(endpoints ...string) Option {
	return func(c *config) { c.endpoints = append([]string(nil), endpoints...) }
}

// WithPrefix sets the key prefix under which every record lives (claims, index, locks). Replicas that
// share claims must use the same prefix; anything else under it is treated as hostile content.
func WithPrefix(prefix string) Option { return func(c *config) { c.prefix = prefix } }

// WithTTL sets the TTL of the etcd lease behind each lock (rounded up to whole seconds, at least 1 s).
func WithTTL(ttl time.Duration) Option { return func(c *config) { c.ttl = ttl } }

// WithStatusWindows sets the launch grace and the status expiry the store's window keys last (the
// Timers.LaunchGrace and StatusExpiry of every Dispatcher on the store: oduflow.New refuses a store
// whose windows differ from its Timers). Without it: oduflow.DefaultTimers' (30 s and 7260 s). Both
// must be positive. Replicas sharing a prefix must use the same two.
func WithStatusWindows(launchGrace, statusExpiry time.Duration) Option {
	return func(c *config) { c.grace, c.expiry = launchGrace, statusExpiry }
}

// WithDialTimeout bounds the first connection.
func WithDialTimeout(d time.Duration) Option { return func(c *config) { c.dialTimeout = d } }

// WithRequestTimeout bounds the calls whose interface takes no context (Lease.Release).
func WithRequestTimeout(d time.Duration) Option { return func(c *config) { c.reqTimeout = d } }

// WithTLS uses the given TLS configuration (it wins over WithTLSFiles).
func WithTLS(cfg *tls.Config) Option {
	return func(c *config) { c.tls = cfg; c.useTLS = cfg != nil }
}

// WithTLSFiles loads a client certificate and key (both or neither) and a CA bundle (empty: the system
// roots) when Open runs.
func WithTLSFiles(certFile, keyFile, caFile string) Option {
	return func(c *config) { c.certFile, c.keyFile, c.caFile, c.useTLS = certFile, keyFile, caFile, true }
}

// WithAuth sets etcd's username and password. They never appear in an error or a log.
func WithAuth(username, password string) Option {
	return func(c *config) { c.username, c.password = username, password }
}

// WithZapLogger gives the etcd client a logger (default: none; the client's own logs are not the
// project's slog logs and may print endpoints).
func WithZapLogger(l *zap.Logger) Option { return func(c *config) { c.logger = l } }

func (c *config) tlsConfig() (*tls.Config, error) {
	if c.tls != nil {
		return c.tls.Clone(), nil
	}
	if !c.useTLS {
		return nil, nil
	}
	out := &tls.Config{MinVersion: tls.VersionTLS12}
	if (c.certFile == "") != (c.keyFile == "") {
		return nil, errmark.Mark(errors.New("etcdstore: TLS certificate and key go together"), claims.ErrInvalidInput)
	}
	if c.certFile != "" {
		cert, err := tls.LoadX509KeyPair(c.certFile, c.keyFile)
		if err != nil {
			return nil, errors.Wrap(err, "etcdstore: load TLS client certificate")
		}
		out.Certificates = []tls.Certificate{cert}
	}
	if c.caFile != "" {
		pem, err := os.ReadFile(c.caFile)
		if err != nil {
			return nil, errors.Wrap(err, "etcdstore: read TLS CA bundle")
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, errmark.Mark(errors.New("etcdstore: TLS CA bundle holds no certificate"), claims.ErrInvalidInput)
		}
		out.RootCAs = pool
	}
	return out, nil
}

// validPrefix: absolute, printable ASCII, no empty segment, no trailing slash (so that keys are
// unambiguous: PREFIX/claims/<request id>).
func validPrefix(p string) bool {
	if len(p) < 2 || len(p) > 128 || p[0] != '/' || strings.HasSuffix(p, "/") || strings.Contains(p, "//") {
		return false
	}
	for i := 0; i < len(p); i++ {
		if p[i] <= ' ' || p[i] > '~' {
			return false
		}
	}
	return true
}

// ParseURL turns "etcd://HOST:PORT[,HOST:PORT...]/PREFIX" (or "etcds://..." for TLS with the system
// roots; add WithTLSFiles or WithTLS after it for a private CA or client certificates) into options, as the
// CLI reads it from ODUFLOW_CLAIMS. An empty path means DefaultPrefix. Credentials in the URL are refused
// (pass them with WithAuth): a URL travels through environments, logs and process lists. The error never
// echoes the URL.
func ParseURL(raw string) (_ []Option, err error) {
	defer errmark.Boundary(&err)
	bad := func(why string) error {
		return errmark.Mark(errors.Newf("etcdstore: claims URL: %s", errors.Safe(why)), claims.ErrInvalidInput)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, bad("not a URL")
	}
	var tlsOn bool
	switch u.Scheme {
	case "etcd":
	case "etcds":
		tlsOn = true
	default:
		return nil, bad("scheme must be etcd or etcds")
	}
	if u.User != nil {
		return nil, bad("credentials in the URL are refused; use WithAuth")
	}
	if u.RawQuery != "" || u.Fragment != "" || u.Opaque != "" {
		return nil, bad("no query, fragment or opaque part")
	}
	if u.Host == "" {
		return nil, bad("no endpoint")
	}
	var eps []string
	for _, hp := range strings.Split(u.Host, ",") {
		host, port, err := net.SplitHostPort(hp)
		if err != nil || host == "" {
			return nil, bad("endpoint must be HOST:PORT")
		}
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return nil, bad("endpoint port out of range")
		}
		if tlsOn {
			eps = append(eps, "https://"+net.JoinHostPort(host, port))
		} else {
			eps = append(eps, "http://"+net.JoinHostPort(host, port))
		}
	}
	prefix := DefaultPrefix
	if u.Path != "" && u.Path != "/" {
		prefix = strings.TrimSuffix(u.Path, "/")
		if !validPrefix(prefix) {
			return nil, bad("prefix must be printable ASCII without empty segments")
		}
	}
	opts := []Option{WithEndpoints(eps...), WithPrefix(prefix)}
	if tlsOn {
		opts = append(opts, func(c *config) { c.useTLS = true })
	}
	return opts, nil
}
