package service_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/json"
	"encoding/pem"
	"io"
	"maps"
	"math/big"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/oduflow/oduflow-go/examples/controller/internal/service"
)

// twoCompanies is a server whose first minion is acme's and second globex's (ODUFLOW_CLIENTS).
func twoCompanies(t *testing.T) (*simEnv, *server, string, string) {
	t.Helper()
	env := startSim(t)
	a, b := env.addMinion(), env.addMinion()
	s := env.server(func(c *service.Config) {
		c.Auth.ClientsFile = writeFile(t, t.TempDir(), "clients", []byte(a.ID()+" acme\n"+b.ID()+" globex\n"), 0o644)
	})
	return env, s, a.ID(), b.ID()
}

// raw sends a request as who and answers the status and the body.
func (s *server) raw(t testing.TB, who, method, path, body string) (int, string) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	resp, err := s.http.Client().Do(s.request(t, who, method, path, rd))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// F1: a request id bound to another company's client answers, through the caller's own client, exactly
// as an id never seen (status, start, resume, custom status), names nothing of the other company, and
// one company taking an id first does not make the other's start fail. Before: 409 "request id already
// bound to minion_id client-<A's>" for status, start and resume; A's start of an id B took first: 409
// naming B's client.
func TestF1RequestIDsDoNotCrossCompanies(t *testing.T) {
	t.Parallel()
	_, s, ma, mb := twoCompanies(t)
	taken := uuid.NewString()
	if code, b := s.raw(t, admin, "POST", "/v1/requests/configure/"+ma, `{"request_id":"`+taken+`"}`); code != http.StatusCreated {
		t.Fatalf("acme start: %d %s", code, b)
	}
	s.waitFinal(t, ma, taken)

	unseen := uuid.NewString()
	for _, tc := range []struct {
		name, who, method string
		path              func(id string) string
	}{
		{"status", otherObserver, "GET", func(id string) string { return "/v1/requests/configure/" + mb + "/" + id }},
		{"status under another profile", otherObserver, "GET", func(id string) string { return "/v1/requests/production/" + mb + "/" + id }},
		{"resume", otherAdmin, "POST", func(id string) string { return "/v1/requests/" + mb + "/" + id + "/resume" }},
		{"custom status", otherObserver, "GET", func(id string) string { return "/v1/minions/" + mb + "/custom-executions/" + id }},
	} {
		codeT, bodyT := s.raw(t, tc.who, tc.method, tc.path(taken), "")
		codeU, bodyU := s.raw(t, tc.who, tc.method, tc.path(unseen), "")
		if strings.Contains(bodyT, ma) || strings.Contains(bodyT, "acme") {
			t.Fatalf("%s: names acme's client: %d %s", tc.name, codeT, bodyT)
		}
		if codeT != codeU || normalize(bodyT, taken) != normalize(bodyU, unseen) {
			t.Fatalf("%s: another company's id answers %d %s; an unseen id %d %s", tc.name, codeT, bodyT, codeU, bodyU)
		}
	}
	// globex's start of acme's id is globex's own request.
	code, b := s.raw(t, otherAdmin, "POST", "/v1/requests/configure/"+mb, `{"request_id":"`+taken+`"}`)
	if code != http.StatusCreated || strings.Contains(b, ma) {
		t.Fatalf("globex starts acme's id: %d %s, want 201", code, b)
	}
	// globex takes an id first; acme's start of it is still acme's.
	first := uuid.NewString()
	if code, b := s.raw(t, otherAdmin, "POST", "/v1/requests/configure/"+mb, `{"request_id":"`+first+`"}`); code != http.StatusCreated {
		t.Fatalf("globex start: %d %s", code, b)
	}
	if code, b := s.raw(t, admin, "POST", "/v1/requests/configure/"+ma, `{"request_id":"`+first+`"}`); code != http.StatusCreated || strings.Contains(b, mb) {
		t.Fatalf("acme's start of an id globex took first: %d %s, want 201", code, b)
	}
	// At-most-once per (client, request) stays: the same id again on acme's client answers its claim.
	if code, b := s.raw(t, admin, "POST", "/v1/requests/configure/"+ma, `{"request_id":"`+first+`"}`); code != http.StatusOK {
		t.Fatalf("acme again: %d %s, want 200", code, b)
	}
}

// normalize replaces the request id and the volatile fields of an answer (timestamps) by placeholders.
func normalize(body, id string) string { return strings.ReplaceAll(body, id, "<id>") }

// F4: an observer never reads a source digest (definitions, their list, executions); an administrator
// of the company does. Before: every role read "digest", from which a guessed source is confirmed
// offline.
func TestF4ObserversSeeNoDigest(t *testing.T) {
	t.Parallel()
	env := startSim(t)
	m := env.addMinion()
	s := env.server()
	s.startFinal(t, m.ID())
	var def struct {
		ID     string `json:"id"`
		Digest string `json:"digest"`
	}
	if code := s.do(t, "POST", "/v1/custom-states", strings.NewReader(jsonBody(map[string]string{"company": "acme", "name": "pin", "source": motd + "# pin 4711\n"})()), &def); code != http.StatusCreated || def.Digest == "" {
		t.Fatalf("create: %d %+v", code, def)
	}
	if code := s.do(t, "PUT", "/v1/minions/"+m.ID()+"/custom-states/"+def.ID, nil, nil); code != http.StatusOK {
		t.Fatalf("assign: %d", code)
	}
	exec := uuid.NewString()
	if code, b := s.raw(t, admin, "POST", "/v1/minions/"+m.ID()+"/custom-states/"+def.ID+"/apply", `{"request_id":"`+exec+`"}`); code != http.StatusCreated {
		t.Fatalf("apply: %d %s", code, b)
	}
	s.waitCustomFinal(t, m.ID(), exec)
	for _, path := range []string{"/v1/custom-states/" + def.ID, "/v1/custom-states", "/v1/minions/" + m.ID() + "/custom-executions",
		"/v1/minions/" + m.ID() + "/custom-executions/" + exec} {
		code, b := s.raw(t, observer, "GET", path, "")
		if code != http.StatusOK || strings.Contains(b, def.Digest) || strings.Contains(b, `"digest"`) {
			t.Fatalf("observer %s: %d %s", path, code, b)
		}
		if code, b := s.raw(t, admin, "GET", path, ""); code != http.StatusOK || !strings.Contains(b, def.Digest) {
			t.Fatalf("administrator %s: %d %s", path, code, b)
		}
	}
}

// auditLines are the audit trail's JSON lines.
func (s *server) auditLines(t *testing.T) []map[string]any {
	t.Helper()
	data := []byte(s.audit.String())
	var out []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("audit line %q: %v", sc.Text(), err)
		}
		out = append(out, m)
	}
	return out
}

// F7: authorization comes before any read of the body: another company's administrator saving or
// applying acme's definition with a malformed or oversized body is 403 (never 400/413), and the audit
// line names acme and outcome refused; an observer's save is refused with acme named too. Before:
// custom_save answered 400 and 413, audited with no company and outcome error.
func TestF7AuthorizationBeforeBody(t *testing.T) {
	t.Parallel()
	env := startSim(t)
	m := env.addMinion()
	other := env.addMinion()
	s := env.server(func(c *service.Config) {
		c.Auth.ClientsFile = writeFile(t, t.TempDir(), "clients", []byte(m.ID()+" acme\n"+other.ID()+" globex\n"), 0o644)
	})
	var def struct {
		ID string `json:"id"`
	}
	if code := s.do(t, "POST", "/v1/custom-states", strings.NewReader(jsonBody(map[string]string{"company": "acme", "name": "motd", "source": motd})()), &def); code != http.StatusCreated {
		t.Fatalf("create: %d", code)
	}
	big := `{"source":"` + strings.Repeat("x", service.MaxCustomBodyBytes+10) + `"}`
	for _, tc := range []struct{ name, who, method, path, body string }{
		{"save malformed", otherAdmin, "PUT", "/v1/custom-states/" + def.ID + "/source", `{"source":`},
		{"save oversized", otherAdmin, "PUT", "/v1/custom-states/" + def.ID + "/source", big},
		{"save as observer", observer, "PUT", "/v1/custom-states/" + def.ID + "/source", `{"source":`},
		{"apply another company's definition", otherAdmin, "POST", "/v1/minions/" + other.ID() + "/custom-states/" + def.ID + "/apply", `{"request_id":`},
	} {
		before := len(s.auditLines(t))
		code, b := s.raw(t, tc.who, tc.method, tc.path, tc.body)
		if code != http.StatusForbidden {
			t.Fatalf("%s: %d %s, want 403", tc.name, code, b)
		}
		lines := s.auditLines(t)[before:]
		if len(lines) != 1 || lines[0]["company"] != "acme" || lines[0]["outcome"] != "refused" || lines[0]["http_status"] != float64(403) {
			t.Fatalf("%s: audit %v", tc.name, lines)
		}
	}
}

// F8: one reading of every input. A body with a key twice or a case variant of a key is 400 and writes
// nothing (before: the last request_id won, "Company" filled company: 201); an error body names no
// catalog file (before: "def.<id>.json"); a client certificate with two CommonNames is refused (before:
// it authenticated as the last one).
func TestF8OneReadingOfEveryInput(t *testing.T) {
	t.Parallel()
	env := startSim(t)
	m := env.addMinion()
	s := env.server()
	a, b := uuid.NewString(), uuid.NewString()
	for _, tc := range []struct{ name, method, path, body string }{
		{"request_id twice", "POST", "/v1/requests/configure/" + m.ID(), `{"request_id":"` + a + `","request_id":"` + b + `"}`},
		{"Request_ID", "POST", "/v1/requests/configure/" + m.ID(), `{"Request_ID":"` + a + `"}`},
		{"company and Company", "POST", "/v1/custom-states", `{"company":"acme","Company":"acme","name":"dup","source":` + quote(motd) + `}`},
		{"name twice", "POST", "/v1/custom-states", `{"company":"acme","name":"a","name":"b","source":` + quote(motd) + `}`},
	} {
		before := settledState(t, s, env)
		code, body := s.raw(t, admin, tc.method, tc.path, tc.body)
		if code != http.StatusBadRequest || !strings.Contains(body, "invalid_input") {
			t.Fatalf("%s: %d %s, want 400", tc.name, code, body)
		}
		if after := settledState(t, s, env); !maps.Equal(before, after) {
			t.Fatalf("%s: written", tc.name)
		}
	}

	// A damaged catalog record: the error names no file.
	var def struct {
		ID string `json:"id"`
	}
	if code := s.do(t, "POST", "/v1/custom-states", strings.NewReader(jsonBody(map[string]string{"company": "acme", "name": "motd", "source": motd})()), &def); code != http.StatusCreated {
		t.Fatalf("create: %d", code)
	}
	if err := os.WriteFile(filepath.Join(env.catalog, "def."+def.ID+".json"), []byte(`{"id":1}`), 0o600); err != nil {
		t.Fatal(err)
	}
	code, body := s.raw(t, admin, "GET", "/v1/custom-states/"+def.ID, "")
	if code < 400 || strings.Contains(body, ".json") || strings.Contains(body, "def.") {
		t.Fatalf("a damaged definition: %d %s", code, body)
	}
}

// F8: a client certificate whose subject has two CommonNames is refused (401), though its last one is
// a mapped principal; one CommonName of the same CA authenticates.
func TestF8TwoCommonNamesRefused(t *testing.T) {
	t.Parallel()
	env := startSim(t)
	m := env.addMinion()
	dir := t.TempDir()
	ca := newCA(t, "oduflow clients")
	srvCert, srvKey := ca.issue(t, "controller", true)
	aliceCert, aliceKey := ca.issue(t, "alice", false)
	twoCert, twoKey := issueNames(t, ca, "stranger", "alice")
	cfg, _ := env.serverConfig()
	cfg.Auth = service.AuthConfig{ClientsFile: cfg.Auth.ClientsFile,
		TLSCert: writeFile(t, dir, "server.pem", srvCert, 0o644), TLSKey: writeFile(t, dir, "server.key", srvKey, 0o600),
		TLSClientCA:   writeFile(t, dir, "ca.pem", ca.pem, 0o644),
		TLSPrincipals: writeFile(t, dir, "principals", []byte("alice observer acme\nstranger observer acme\n"), 0o600)}
	svc, err := service.Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	url := serveTLS(t, svc)
	for who, want := range map[string]int{"alice": 200, "two names": 401} {
		c := tlsClient(t, ca, aliceCert, aliceKey)
		if who == "two names" {
			c = tlsClient(t, ca, twoCert, twoKey)
		}
		resp, err := c.Get(url + "/v1/minions/" + m.ID() + "/custom-states")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Fatalf("%s: %d, want %d", who, resp.StatusCode, want)
		}
	}
}

// issueNames is ca.issue with one CommonName attribute per name, in order.
func issueNames(t *testing.T, ca *testCA, names ...string) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	var subject pkix.Name
	for _, n := range names {
		subject.ExtraNames = append(subject.ExtraNames, pkix.AttributeTypeAndValue{Type: asn1.ObjectIdentifier{2, 5, 4, 3}, Value: n})
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: subject,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
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
