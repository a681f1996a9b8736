package service_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/oduflow/oduflow-go/examples/controller/internal/service"
)

// testCA is a certificate authority made in the test.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

func newCA(t *testing.T, name string) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true,
		BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return &testCA{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// issue makes a leaf certificate for cn (a server for 127.0.0.1 when server), PEM certificate and key.
func (ca *testCA) issue(t *testing.T, cn string, server bool) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial, _ := rand.Int(rand.Reader, big.NewInt(1<<62))
	tmpl := &x509.Certificate{SerialNumber: serial, Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	if server {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
		tmpl.IPAddresses = []net.IP{net.ParseIP("127.0.0.1")}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb})
}

func writeFile(t *testing.T, dir, name string, b []byte, mode os.FileMode) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, b, mode); err != nil {
		t.Fatal(err)
	}
	return p
}

// serveTLS serves the service on a real listener with its TLS configuration.
func serveTLS(t *testing.T, svc *service.Service) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: svc.Handler(), ErrorLog: nil}
	go func() { _ = srv.Serve(tls.NewListener(ln, svc.TLSConfig())) }()
	t.Cleanup(func() {
		_ = srv.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = svc.Close(ctx)
	})
	return "https://" + ln.Addr().String()
}

func tlsClient(t *testing.T, ca *testCA, certPEM, keyPEM []byte) *http.Client {
	t.Helper()
	pool := x509.NewCertPool()
	pool.AddCert(ca.cert)
	tc := &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	if certPEM != nil {
		c, err := tls.X509KeyPair(certPEM, keyPEM)
		if err != nil {
			t.Fatal(err)
		}
		tc.Certificates = []tls.Certificate{c}
	}
	return &http.Client{Transport: &http.Transport{TLSClientConfig: tc}, Timeout: 10 * time.Second}
}

// Mutual TLS over a real listener: a certificate of the client CA whose CommonName the mapping names is
// that principal; one of an unknown CA, or none, is refused at the handshake; a mapped CA's certificate
// with an unmapped CommonName is 401.
func TestMutualTLS(t *testing.T) {
	t.Parallel()
	env := startSim(t)
	m := env.addMinion()
	dir := t.TempDir()
	ca, rogue := newCA(t, "oduflow clients"), newCA(t, "rogue")
	srvCert, srvKey := ca.issue(t, "controller", true)
	aliceCert, aliceKey := ca.issue(t, "alice", false)
	strangerCert, strangerKey := ca.issue(t, "stranger", false)
	rogueCert, rogueKey := rogue.issue(t, "alice", false)

	cfg, _ := env.serverConfig()
	cfg.Auth = service.AuthConfig{ClientsFile: cfg.Auth.ClientsFile,
		TLSCert: writeFile(t, dir, "server.pem", srvCert, 0o644), TLSKey: writeFile(t, dir, "server.key", srvKey, 0o600),
		TLSClientCA:   writeFile(t, dir, "ca.pem", ca.pem, 0o644),
		TLSPrincipals: writeFile(t, dir, "principals", []byte("# CommonName role companies\nalice observer acme\n"), 0o600)}
	svc, err := service.Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	url := serveTLS(t, svc)

	get := func(c *http.Client, path string) (int, error) {
		resp, err := c.Get(url + path)
		if err != nil {
			return 0, err
		}
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, resp.Body)
		return resp.StatusCode, nil
	}
	alice := tlsClient(t, ca, aliceCert, aliceKey)
	if code, err := get(alice, "/v1/minions/"+m.ID()+"/custom-states"); err != nil || code != http.StatusOK {
		t.Fatalf("alice (observer acme): %d %v", code, err)
	}
	resp, err := alice.Post(url+"/v1/requests/configure/"+m.ID(), "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("alice starts: %d, want 403", resp.StatusCode)
	}
	if code, err := get(tlsClient(t, ca, strangerCert, strangerKey), "/v1/unresolved"); err != nil || code != http.StatusUnauthorized {
		t.Fatalf("an unmapped CommonName: %d %v, want 401", code, err)
	}
	for name, c := range map[string]*http.Client{"unknown CA": tlsClient(t, ca, rogueCert, rogueKey), "no certificate": tlsClient(t, ca, nil, nil)} {
		code, err := get(c, "/healthz")
		if err == nil {
			t.Fatalf("%s: answered %d, want a refused handshake", name, code)
		}
		if !strings.Contains(err.Error(), "tls") && !strings.Contains(err.Error(), "certificate") {
			t.Fatalf("%s: %v, want a TLS alert", name, err)
		}
	}
}

// A TLS server without client certificates, with bearer tokens: HTTPS, the token decides.
func TestTLSServerWithTokens(t *testing.T) {
	t.Parallel()
	env := startSim(t)
	m := env.addMinion()
	dir := t.TempDir()
	ca := newCA(t, "server ca")
	srvCert, srvKey := ca.issue(t, "controller", true)
	cfg, tokens := env.serverConfig()
	cfg.Auth.TLSCert, cfg.Auth.TLSKey = writeFile(t, dir, "server.pem", srvCert, 0o644), writeFile(t, dir, "server.key", srvKey, 0o600)
	svc, err := service.Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	url := serveTLS(t, svc)
	c := tlsClient(t, ca, nil, nil)
	for who, want := range map[string]int{nobody: 401, observer: 200, otherObserver: 403} {
		req, _ := http.NewRequest("GET", url+"/v1/minions/"+m.ID()+"/custom-states", nil)
		if who != nobody {
			req.Header.Set("Authorization", "Bearer "+tokens[who])
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Fatalf("%q over TLS: %d, want %d", who, resp.StatusCode, want)
		}
	}
	// A private key others may read is refused at start.
	_ = os.Chmod(cfg.Auth.TLSKey, 0o640)
	if _, err := service.Open(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), "ODUFLOW_TLS_KEY: mode 0640") {
		t.Fatalf("a readable key: %v", err)
	}
}
