package oduflowenv

import "strings"

// DefaultStateDir is the default claim store directory (see the oduflow package doc).
const DefaultStateDir = "/var/cache/salt/oduflow-apply"

// DefaultPKIDir is the Salt master's PKI directory.
const DefaultPKIDir = "/etc/salt/pki/master"

// Etcd are the etcd claim store's credentials and TLS files, from the environment only (never flags, so
// that they stay out of process lists), named as etcdctl users expect (ETCDCTL_USER, ...).
type Etcd struct {
	User     string // ODUFLOW_ETCD_USER: "name" or, as etcdctl's --user, "name:password"
	Password string // ODUFLOW_ETCD_PASSWORD
	CACert   string // ODUFLOW_ETCD_CACERT
	Cert     string // ODUFLOW_ETCD_CERT
	Key      string // ODUFLOW_ETCD_KEY
}

// Settings are the connection settings, each read from its ODUFLOW_* variable (see the package doc).
type Settings struct {
	Master     string // ODUFLOW_SALT_MASTER
	Events     string // ODUFLOW_SALT_EVENTS
	KeyFile    string // ODUFLOW_SALT_KEY_FILE
	Eauth      string // ODUFLOW_SALT_EAUTH
	User       string // ODUFLOW_SALT_USER
	Password   string // ODUFLOW_SALT_PASSWORD (only from the environment, never a flag)
	StateDir   string // ODUFLOW_STATE_DIR, DefaultStateDir when unset
	PKIDir     string // ODUFLOW_SALT_PKI_DIR, DefaultPKIDir when unset
	Claims     string // ODUFLOW_CLAIMS: file:DIR, DIR or etcd://…
	CatalogDir string // ODUFLOW_CATALOG_DIR
	Profiles   string // ODUFLOW_PROFILES: the profile table file (profiles.LoadTable); unset: the seeds'
	Etcd       Etcd   // ODUFLOW_ETCD_*
	// EnvOnly: the program reads these from the environment only (the controller has no flags), so
	// messages name the variables, never a flag it does not have.
	EnvOnly bool
}

// name is how a message names a setting: the flag (oduflowctl, whose flags override the variables) or,
// for a program without flags, the environment variable.
func (s Settings) name(flag, env string) string {
	if s.EnvOnly {
		return env
	}
	return flag
}

// FromEnv reads the settings through getenv (os.Getenv in a program), with the defaults filled in.
func FromEnv(getenv func(string) string) Settings {
	s := Settings{
		Master:     getenv("ODUFLOW_SALT_MASTER"),
		Events:     getenv("ODUFLOW_SALT_EVENTS"),
		KeyFile:    getenv("ODUFLOW_SALT_KEY_FILE"),
		Eauth:      getenv("ODUFLOW_SALT_EAUTH"),
		User:       getenv("ODUFLOW_SALT_USER"),
		Password:   getenv("ODUFLOW_SALT_PASSWORD"),
		StateDir:   getenv("ODUFLOW_STATE_DIR"),
		PKIDir:     getenv("ODUFLOW_SALT_PKI_DIR"),
		Claims:     getenv("ODUFLOW_CLAIMS"),
		CatalogDir: getenv("ODUFLOW_CATALOG_DIR"),
		Profiles:   getenv("ODUFLOW_PROFILES"),
		Etcd:       EtcdFromEnv(getenv),
	}
	if s.StateDir == "" {
		s.StateDir = DefaultStateDir
	}
	if s.PKIDir == "" {
		s.PKIDir = DefaultPKIDir
	}
	return s
}

// EtcdFromEnv reads the ODUFLOW_ETCD_* variables.
func EtcdFromEnv(getenv func(string) string) Etcd {
	return Etcd{User: getenv("ODUFLOW_ETCD_USER"), Password: getenv("ODUFLOW_ETCD_PASSWORD"),
		CACert: getenv("ODUFLOW_ETCD_CACERT"), Cert: getenv("ODUFLOW_ETCD_CERT"), Key: getenv("ODUFLOW_ETCD_KEY")}
}

// Env renders the etcd settings as environment entries, for a child process (a detached worker).
func (s Etcd) Env() []string {
	return []string{"ODUFLOW_ETCD_USER=" + s.User, "ODUFLOW_ETCD_PASSWORD=" + s.Password,
		"ODUFLOW_ETCD_CACERT=" + s.CACert, "ODUFLOW_ETCD_CERT=" + s.Cert, "ODUFLOW_ETCD_KEY=" + s.Key}
}

// EtcdClaims reports whether Claims names an etcd store (etcd://HOST:PORT[,HOST:PORT...]/PREFIX, or
// etcds:// for TLS).
func (s Settings) EtcdClaims() bool {
	return strings.HasPrefix(s.Claims, "etcd://") || strings.HasPrefix(s.Claims, "etcds://")
}
