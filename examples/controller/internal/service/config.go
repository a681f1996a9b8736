package service

import (
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/oduflow/oduflow-go/examples/internal/oduflowenv"
)

// DefaultListen is the address the service listens on when ODUFLOW_LISTEN is unset: loopback only.
const DefaultListen = "127.0.0.1:8080"

// DefaultDrainTimeout is how long a SIGTERM drain may take when ODUFLOW_DRAIN_TIMEOUT is unset: inside a
// pod's default 30 s grace period.
const DefaultDrainTimeout = 25 * time.Second

// Config is the service's configuration: the connection settings shared with oduflowctl, the listen
// address and the drain timeout.
type Config struct {
	Settings oduflowenv.Settings
	// Listen is host:port (ODUFLOW_LISTEN); the host may be empty (every interface), the port 0 (any).
	Listen string
	// DrainTimeout bounds the drain on SIGTERM (ODUFLOW_DRAIN_TIMEOUT, a Go duration such as 25s).
	DrainTimeout time.Duration
	// Auth is how callers are authenticated and which company each client belongs to.
	Auth AuthConfig
	// CatalogDir is the custom-state catalog's directory (ODUFLOW_CATALOG_DIR); empty: the etcd claim
	// store's catalog with etcd claims, else the directory "catalog" next to the claim directory.
	CatalogDir string
	// Limits bounds connections and unauthenticated requests (ODUFLOW_MAX_CONNECTIONS,
	// ODUFLOW_MAX_CONNECTIONS_PER_SOURCE, ODUFLOW_MAX_UNAUTHENTICATED_PER_SOURCE).
	Limits Limits
}

// ConfigFromEnv reads the configuration through getenv and checks it before anything starts: the master,
// the event bus and the credentials (the messages oduflowctl prints), the listen address and the drain
// timeout. Every error is an *oduflowenv.Error of kind ErrUsage.
func ConfigFromEnv(getenv func(string) string) (Config, error) {
	c := Config{Settings: oduflowenv.FromEnv(getenv), Listen: getenv("ODUFLOW_LISTEN"), DrainTimeout: DefaultDrainTimeout}
	c.Settings.EnvOnly = true // the controller has no flags: its messages name the variables
	if c.Listen == "" {
		c.Listen = DefaultListen
	}
	if err := CheckListen(c.Listen); err != nil {
		return Config{}, err
	}
	if v := getenv("ODUFLOW_DRAIN_TIMEOUT"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return Config{}, usageError(fmt.Sprintf("ODUFLOW_DRAIN_TIMEOUT %q: want a positive Go duration, e.g. 25s", v))
		}
		c.DrainTimeout = d
	}
	if err := c.Settings.CheckMaster("controller", true); err != nil {
		return Config{}, err
	}
	c.CatalogDir = getenv("ODUFLOW_CATALOG_DIR")
	for _, v := range []struct {
		env string
		to  *int
	}{{"ODUFLOW_MAX_CONNECTIONS", &c.Limits.MaxConnections}, {"ODUFLOW_MAX_CONNECTIONS_PER_SOURCE", &c.Limits.MaxConnectionsPerSource},
		{"ODUFLOW_MAX_UNAUTHENTICATED_PER_SOURCE", &c.Limits.UnauthenticatedPerSec}} {
		if s := getenv(v.env); s != "" {
			n, err := strconv.Atoi(s)
			if err != nil || n <= 0 || n > 1<<20 {
				return Config{}, usageError(fmt.Sprintf("%s %q: want a positive integer", v.env, s))
			}
			*v.to = n
		}
	}
	a, err := authFromEnv(getenv)
	if err != nil {
		return Config{}, err
	}
	if err := a.Check(c.Listen); err != nil {
		return Config{}, err
	}
	c.Auth = a
	return c, nil
}

// CheckListen checks a listen address: host:port with a numeric port 0-65535 and a host that is empty, an
// IP address or a name (no scheme, no path).
func CheckListen(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return usageError(fmt.Sprintf("ODUFLOW_LISTEN %q: want host:port, e.g. %s", addr, DefaultListen))
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return usageError(fmt.Sprintf("ODUFLOW_LISTEN %q: port %q: want 0-65535", addr, port))
	}
	for _, r := range host {
		if !(r == '.' || r == '-' || r == ':' || r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			return usageError(fmt.Sprintf("ODUFLOW_LISTEN %q: host %q: want an IP address or a host name", addr, host))
		}
	}
	return nil
}

func usageError(msg string) error { return &oduflowenv.Error{Kind: oduflowenv.ErrUsage, Msg: msg} }
