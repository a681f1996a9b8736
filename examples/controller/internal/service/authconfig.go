package service

import (
	"fmt"
	"net"
	"strconv"
)

// DefaultMaxInflight is the per-principal bound on requests in progress when
// ODUFLOW_MAX_INFLIGHT_PER_PRINCIPAL is unset.
const DefaultMaxInflight = 16

// AuthConfig is the authentication settings: bearer tokens, mutual TLS, or (loopback only) none, and the
// client bindings file. Files are read by Open.
type AuthConfig struct {
	// TokensFile (ODUFLOW_AUTH_TOKENS): lines NAME ROLE COMPANY[,COMPANY...] SHA256HEX, mode 0600.
	TokensFile string
	// TLSCert, TLSKey (ODUFLOW_TLS_CERT, ODUFLOW_TLS_KEY): the server's PEM certificate and key.
	TLSCert, TLSKey string
	// TLSClientCA (ODUFLOW_TLS_CLIENT_CA): PEM CA bundle client certificates must chain to; the principal
	// is the certificate's subject CommonName, mapped by TLSPrincipals (ODUFLOW_TLS_PRINCIPALS: lines
	// NAME ROLE COMPANY[,COMPANY...], mode 0600).
	TLSClientCA, TLSPrincipals string
	// ClientsFile (ODUFLOW_CLIENTS): lines MINION COMPANY binding each managed client to its company.
	ClientsFile string
	// Insecure (ODUFLOW_INSECURE_NO_AUTH=1): every caller is an administrator of every company; only on a
	// loopback listen address.
	Insecure bool
	// MaxInflight (ODUFLOW_MAX_INFLIGHT_PER_PRINCIPAL) bounds one principal's requests in progress: more
	// answer 429. 0 is DefaultMaxInflight.
	MaxInflight int
}

// errNoAuth is the one line a service without authentication refuses to start with.
const errNoAuth = "no authentication configured: set ODUFLOW_AUTH_TOKENS, or ODUFLOW_TLS_CERT, ODUFLOW_TLS_KEY, " +
	"ODUFLOW_TLS_CLIENT_CA and ODUFLOW_TLS_PRINCIPALS (ODUFLOW_INSECURE_NO_AUTH=1 only with a loopback ODUFLOW_LISTEN)"

func authFromEnv(getenv func(string) string) (AuthConfig, error) {
	a := AuthConfig{TokensFile: getenv("ODUFLOW_AUTH_TOKENS"), TLSCert: getenv("ODUFLOW_TLS_CERT"),
		TLSKey: getenv("ODUFLOW_TLS_KEY"), TLSClientCA: getenv("ODUFLOW_TLS_CLIENT_CA"),
		TLSPrincipals: getenv("ODUFLOW_TLS_PRINCIPALS"), ClientsFile: getenv("ODUFLOW_CLIENTS")}
	switch v := getenv("ODUFLOW_INSECURE_NO_AUTH"); v {
	case "", "0":
	case "1":
		a.Insecure = true
	default:
		return AuthConfig{}, usageError(fmt.Sprintf("ODUFLOW_INSECURE_NO_AUTH %q: want 1 or unset", v))
	}
	if v := getenv("ODUFLOW_MAX_INFLIGHT_PER_PRINCIPAL"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 || n > 1<<16 {
			return AuthConfig{}, usageError(fmt.Sprintf("ODUFLOW_MAX_INFLIGHT_PER_PRINCIPAL %q: want a positive integer", v))
		}
		a.MaxInflight = n
	}
	return a, nil
}

// Check refuses a configuration without authentication (errNoAuth), an incomplete TLS set-up, and the
// insecure mode anywhere but on a loopback listen address or together with real authentication.
func (a AuthConfig) Check(listen string) error {
	mtls := a.TLSClientCA != "" || a.TLSPrincipals != ""
	switch {
	case (a.TLSCert == "") != (a.TLSKey == ""):
		return usageError("ODUFLOW_TLS_CERT and ODUFLOW_TLS_KEY: set both, or neither")
	case mtls && (a.TLSClientCA == "" || a.TLSPrincipals == ""):
		return usageError("ODUFLOW_TLS_CLIENT_CA and ODUFLOW_TLS_PRINCIPALS: set both, or neither")
	case mtls && a.TLSCert == "":
		return usageError("ODUFLOW_TLS_CLIENT_CA needs ODUFLOW_TLS_CERT and ODUFLOW_TLS_KEY")
	case a.Insecure && (a.TokensFile != "" || mtls):
		return usageError("ODUFLOW_INSECURE_NO_AUTH=1 with ODUFLOW_AUTH_TOKENS or client certificates: choose one")
	case a.Insecure && !IsLoopback(listen):
		return usageError(fmt.Sprintf("ODUFLOW_INSECURE_NO_AUTH=1 refused: ODUFLOW_LISTEN %q is not a loopback address (127.0.0.0/8, ::1, localhost)", listen))
	case !a.Insecure && a.TokensFile == "" && !mtls:
		return usageError(errNoAuth)
	}
	return nil
}

// IsLoopback reports whether a listen address host:port is on loopback only: 127.0.0.0/8, ::1 or
// localhost (an empty host is every interface).
func IsLoopback(listen string) bool {
	host, _, err := net.SplitHostPort(listen)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
