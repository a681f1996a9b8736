package service

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"net/http"
)

// serverTLS builds the server's TLS configuration: its certificate and key (ODUFLOW_TLS_CERT,
// ODUFLOW_TLS_KEY) and, with ODUFLOW_TLS_CLIENT_CA, client certificates required and verified against
// that CA bundle at the handshake (tls.RequireAndVerifyClientCert): a client without one, or with one of
// another CA, never reaches a handler. TLS 1.2 at least.
func serverTLS(ctx context.Context, a AuthConfig) (*tls.Config, error) {
	if a.TLSCert == "" && a.TLSKey == "" && a.TLSClientCA == "" {
		return nil, nil
	}
	if a.TLSCert == "" || a.TLSKey == "" {
		return nil, usageError("ODUFLOW_TLS_CERT and ODUFLOW_TLS_KEY: set both, or neither")
	}
	certPEM, err := readPrivateFile(ctx, "ODUFLOW_TLS_CERT", a.TLSCert, false)
	if err != nil {
		return nil, err
	}
	keyPEM, err := readPrivateFile(ctx, "ODUFLOW_TLS_KEY", a.TLSKey, true)
	if err != nil {
		return nil, err
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, usageError("ODUFLOW_TLS_CERT, ODUFLOW_TLS_KEY: not a matching PEM certificate and key")
	}
	tc := &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{cert}}
	if a.TLSClientCA != "" {
		caPEM, err := readPrivateFile(ctx, "ODUFLOW_TLS_CLIENT_CA", a.TLSClientCA, false)
		if err != nil {
			return nil, err
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(caPEM) {
			return nil, usageError("ODUFLOW_TLS_CLIENT_CA: no PEM certificate")
		}
		tc.ClientCAs = pool
		tc.ClientAuth = tls.RequireAndVerifyClientCert
	}
	return tc, nil
}

// certPrincipal is the principal of a verified client certificate: its subject CommonName looked up in
// the ODUFLOW_TLS_PRINCIPALS mapping. ok is false without a verified chain, for an unmapped name, and
// for a subject with no CommonName or more than one (crypto/x509 keeps the last of several, a proxy or a
// log may show the first: one certificate is one name or none).
func certPrincipal(r *http.Request, mapping map[string]Principal) (Principal, bool) {
	if r.TLS == nil || len(r.TLS.VerifiedChains) == 0 || len(r.TLS.VerifiedChains[0]) == 0 || mapping == nil {
		return Principal{}, false
	}
	leaf := r.TLS.VerifiedChains[0][0]
	if commonNames(leaf.Subject.Names) != 1 {
		return Principal{}, false
	}
	p, ok := mapping[leaf.Subject.CommonName]
	return p, ok
}

// oidCommonName is the X.520 commonName attribute (2.5.4.3).
var oidCommonName = asn1.ObjectIdentifier{2, 5, 4, 3}

// commonNames counts the CommonName attributes of a subject.
func commonNames(names []pkix.AttributeTypeAndValue) int {
	n := 0
	for _, a := range names {
		if a.Type.Equal(oidCommonName) {
			n++
		}
	}
	return n
}
