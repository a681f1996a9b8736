package service_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/oduflow/oduflow-go/examples/controller/internal/service"
	"github.com/oduflow/oduflow-go/oduflow/oduflowtest/fakeminion"
)

// TestEditorBundleChecksum: the committed editor bundle is the one scripts/build-console-editor.sh
// built from the pinned versions (its SHA-256 recorded next to it).
func TestEditorBundleChecksum(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("ui/static/editor.js")
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile("ui/static/editor.js.sha256")
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	if got := hex.EncodeToString(sum[:]); got != strings.TrimSpace(string(want)) {
		t.Fatalf("ui/static/editor.js: sha256 %s, recorded %s: rebuild with scripts/build-console-editor.sh", got, strings.TrimSpace(string(want)))
	}
	lock, err := os.ReadFile("ui/editor/package-lock.json")
	if err != nil || !strings.Contains(string(lock), `"node_modules/@codemirror/lang-yaml"`) {
		t.Fatalf("ui/editor/package-lock.json pins no @codemirror/lang-yaml: %v", err)
	}
}

var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// browserClient is an HTTP client with a cookie jar that does not follow redirects.
func browserClient(t *testing.T) *http.Client {
	t.Helper()
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &http.Client{Jar: jar, Timeout: 10 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

func fetch(t *testing.T, c *http.Client, method, u string, form url.Values) (*http.Response, string) {
	t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, u, body)
	if err != nil {
		t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// signIn signs c in as who and returns the pages' CSRF token.
func signIn(t *testing.T, s *server, c *http.Client, who string) *http.Cookie {
	t.Helper()
	_, page := fetch(t, c, "GET", s.http.URL+"/ui/login", nil)
	m := csrfField.FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("no CSRF field on the sign-in page")
	}
	resp, _ := fetch(t, c, "POST", s.http.URL+"/ui/login", url.Values{"csrf": {m[1]}, "token": {s.tokens[who]}})
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("sign in: %d", resp.StatusCode)
	}
	for _, ck := range resp.Cookies() {
		if ck.Name == "oduflow_session" {
			return ck
		}
	}
	t.Fatal("no session cookie")
	return nil
}

// TestConsoleSessionAndCSRF: the session cookie is HttpOnly, SameSite=Strict and expiring; pages carry
// a strict Content-Security-Policy; a POST without the CSRF token is 403 and starts nothing; sign-out
// and a change of the token file revoke the session; the cookie never authorizes a write on the API.
func TestConsoleSessionAndCSRF(t *testing.T) {
	t.Parallel()
	env := startSim(t)
	m := env.addMinion()
	s := env.server()
	c := browserClient(t)
	if resp, _ := fetch(t, c, "GET", s.http.URL+"/ui/clients", nil); resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/ui/login" {
		t.Fatalf("unauthenticated page: %d %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	if resp, _ := fetch(t, c, "POST", s.http.URL+"/ui/login", url.Values{"token": {s.tokens[admin]}}); resp.StatusCode != http.StatusForbidden {
		t.Fatalf("sign-in without its CSRF token: %d", resp.StatusCode)
	}
	ck := signIn(t, s, c, admin)
	if !ck.HttpOnly || ck.SameSite != http.SameSiteStrictMode || ck.MaxAge <= 0 || ck.Secure {
		t.Fatalf("session cookie %+v: want HttpOnly, SameSite=Strict, expiring, not Secure over plain HTTP", ck)
	}
	resp, page := fetch(t, c, "GET", s.http.URL+"/ui/clients/"+m.ID()+"/start/configure", nil)
	csp := resp.Header.Get("Content-Security-Policy")
	if resp.StatusCode != http.StatusOK || !strings.Contains(csp, "script-src 'self';") || strings.Contains(csp, "unsafe-inline") ||
		strings.Contains(page, "<script>") || strings.Contains(page, "onclick") {
		t.Fatalf("confirmation page: %d, CSP %q", resp.StatusCode, csp)
	}
	tok := csrfField.FindStringSubmatch(page)[1]
	rid := regexp.MustCompile(`name="request_id" value="([^"]+)"`).FindStringSubmatch(page)[1]
	start := s.http.URL + "/ui/clients/" + m.ID() + "/start/configure"
	if resp, _ := fetch(t, c, "POST", start, url.Values{"request_id": {rid}}); resp.StatusCode != http.StatusForbidden {
		t.Fatalf("a POST without the CSRF token: %d, want 403", resp.StatusCode)
	}
	if resp, _ := fetch(t, c, "POST", start, url.Values{"request_id": {rid}, "csrf": {tok + "x"}}); resp.StatusCode != http.StatusForbidden {
		t.Fatalf("a POST with a wrong CSRF token: %d, want 403", resp.StatusCode)
	}
	if runs := m.Calls("oduflow_job.run"); runs != 0 {
		t.Fatalf("a refused POST ran %d times", runs)
	}
	// The cookie reads the API (the pages' event streams), never writes it.
	if resp, _ := fetch(t, c, "POST", s.http.URL+"/v1/requests/configure/"+m.ID(), url.Values{}); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("a write on the API by cookie: %d, want 401", resp.StatusCode)
	}
	for range 2 { // the same request id twice: one request
		if resp, _ := fetch(t, c, "POST", start, url.Values{"request_id": {rid}, "csrf": {tok}}); resp.StatusCode != http.StatusSeeOther {
			t.Fatalf("start: %d", resp.StatusCode)
		}
	}
	s.waitFinal(t, m.ID(), rid)
	if runs := m.Calls("oduflow_job.run"); runs != 1 {
		t.Fatalf("the same confirmation twice ran %d times, want 1", runs)
	}
	if resp, _ := fetch(t, c, "GET", s.http.URL+"/v1/requests/configure/"+m.ID()+"/"+rid, nil); resp.StatusCode != http.StatusOK {
		t.Fatalf("a read on the API by cookie: %d", resp.StatusCode)
	}
	// Resume status check of a request that is not unknown: the resume route's refusal, as a page.
	resume := s.http.URL + "/ui/clients/" + m.ID() + "/requests/" + rid + "/resume"
	if resp, page := fetch(t, c, "POST", resume, url.Values{"csrf": {tok}, "profile": {"configure"}}); resp.StatusCode != http.StatusConflict ||
		!strings.Contains(page, `id="reason">not_unknown<`) {
		t.Fatalf("resume of a succeeded request: %d", resp.StatusCode)
	}
	if runs := m.Calls("oduflow_job.run"); runs != 1 {
		t.Fatalf("a resume ran again: %d runs", runs)
	}
	// Sign-out revokes the session, even for a copy of its cookie.
	stolen := browserClient(t)
	u, _ := url.Parse(s.http.URL)
	stolen.Jar.SetCookies(u, []*http.Cookie{{Name: ck.Name, Value: ck.Value}})
	if resp, _ := fetch(t, c, "POST", s.http.URL+"/ui/logout", url.Values{"csrf": {tok}}); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("sign out: %d", resp.StatusCode)
	}
	if resp, _ := fetch(t, stolen, "GET", s.http.URL+"/ui/clients", nil); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("after sign-out: %d, want the sign-in page", resp.StatusCode)
	}
	// A change of the token file revokes every session.
	signIn(t, s, c, admin)
	if resp, _ := fetch(t, c, "GET", s.http.URL+"/ui/clients", nil); resp.StatusCode != http.StatusOK {
		t.Fatalf("signed in again: %d", resp.StatusCode)
	}
	f := s.cfg.Auth.TokensFile
	b, _ := os.ReadFile(f)
	if err := os.WriteFile(f, append(b, "# rotated\n"...), 0o600); err != nil {
		t.Fatal(err)
	}
	if resp, _ := fetch(t, c, "GET", s.http.URL+"/ui/clients", nil); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("after the token file changed: %d, want the sign-in page", resp.StatusCode)
	}
}

// TestConsoleMutualTLSNeedsNoSignIn: a browser with a client certificate of the client CA reads the
// console at once (no sign-in page), as the certificate's principal, and its POSTs still need the CSRF
// token the pages carry.
func TestConsoleMutualTLSNeedsNoSignIn(t *testing.T) {
	t.Parallel()
	env := startSim(t)
	m := env.addMinion()
	dir := t.TempDir()
	ca := newCA(t, "oduflow clients")
	srvCert, srvKey := ca.issue(t, "controller", true)
	aliceCert, aliceKey := ca.issue(t, "alice", false)
	cfg, _ := env.serverConfig()
	cfg.Auth = service.AuthConfig{ClientsFile: cfg.Auth.ClientsFile,
		TLSCert: writeFile(t, dir, "server.pem", srvCert, 0o644), TLSKey: writeFile(t, dir, "server.key", srvKey, 0o600),
		TLSClientCA:   writeFile(t, dir, "ca.pem", ca.pem, 0o644),
		TLSPrincipals: writeFile(t, dir, "principals", []byte("alice administrator acme\n"), 0o600)}
	svc, err := service.Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	base := serveTLS(t, svc)
	alice := tlsClient(t, ca, aliceCert, aliceKey)
	alice.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, page := fetch(t, alice, "GET", base+"/ui/clients/"+m.ID()+"/start/configure", nil)
	if resp.StatusCode != http.StatusOK || !strings.Contains(page, `id="principal">alice<`) {
		t.Fatalf("alice's certificate: %d, want the page as alice", resp.StatusCode)
	}
	tok := csrfField.FindStringSubmatch(page)[1]
	rid := regexp.MustCompile(`name="request_id" value="([^"]+)"`).FindStringSubmatch(page)[1]
	start := base + "/ui/clients/" + m.ID() + "/start/configure"
	if resp, _ := fetch(t, alice, "POST", start, url.Values{"request_id": {rid}}); resp.StatusCode != http.StatusForbidden {
		t.Fatalf("alice's POST without the CSRF token: %d, want 403", resp.StatusCode)
	}
	if resp, _ := fetch(t, alice, "POST", start, url.Values{"request_id": {rid}, "csrf": {tok}}); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("alice's start: %d", resp.StatusCode)
	}
}

// TestConsoleOtherCompanySeesNothing: an observer of another company lists none of acme's clients,
// requests or custom states, and a client page of acme is 403.
func TestConsoleOtherCompanySeesNothing(t *testing.T) {
	t.Parallel()
	env := startSim(t)
	m := env.addMinion()
	s := env.server()
	s.startFinal(t, m.ID())
	if code := s.do(t, "POST", "/v1/custom-states", strings.NewReader(`{"company":"acme","name":"motd","source":`+quote(motd)+`}`), nil); code != http.StatusCreated {
		t.Fatalf("create: %d", code)
	}
	c := browserClient(t)
	signIn(t, s, c, otherObserver)
	for path, hidden := range map[string]string{"/ui/clients": m.ID(), "/ui/unresolved": m.ID(), "/ui/custom-states": "motd"} {
		resp, page := fetch(t, c, "GET", s.http.URL+path, nil)
		if resp.StatusCode != http.StatusOK || strings.Contains(page, hidden) {
			t.Fatalf("%s as an observer of globex: %d, shows %v", path, resp.StatusCode, strings.Contains(page, hidden))
		}
	}
	if resp, _ := fetch(t, c, "GET", s.http.URL+"/ui/clients/"+m.ID(), nil); resp.StatusCode != http.StatusForbidden {
		t.Fatalf("acme's client as an observer of globex: %d, want 403", resp.StatusCode)
	}
}

// TestConsoleReadinessShowsGuardReason: a client whose minion module's runtime guard refuses runs is
// not ready, with the guard's reason, on its page and then in the clients list; no start button is
// disabled by it (the server decides), but the reason is in front of the operator.
func TestConsoleReadinessShowsGuardReason(t *testing.T) {
	t.Parallel()
	env := startSim(t)
	m := env.addMinion(fakeminion.WithRuntimeGuardFailure("salt_version_unsupported"))
	s := env.server()
	c := browserClient(t)
	signIn(t, s, c, admin)
	resp, page := fetch(t, c, "GET", s.http.URL+"/ui/clients/"+m.ID(), nil)
	if resp.StatusCode != http.StatusOK || !strings.Contains(page, "not ready") || !strings.Contains(page, "runtime guard: salt_version_unsupported") {
		t.Fatalf("client page: %d, want not ready with the guard's reason", resp.StatusCode)
	}
	_, list := fetch(t, c, "GET", s.http.URL+"/ui/clients", nil)
	if !strings.Contains(list, "runtime guard: salt_version_unsupported") {
		t.Fatal("the clients list does not show the guard's reason")
	}
}
