package service

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

func tokenLine(name, role, companies, token string) string {
	sum := sha256.Sum256([]byte(token))
	return name + " " + role + " " + companies + " " + hex.EncodeToString(sum[:])
}

func TestTokenFile(t *testing.T) {
	t.Parallel()
	ts, err := parseTokens("T", []byte("# comment\n\n"+tokenLine("alice", "administrator", "acme,globex,acme", "a-token")+"  # trailing\n"+
		tokenLine("olga", "observer", "*", "o-token")+"\n"))
	if err != nil {
		t.Fatal(err)
	}
	p, ok := ts.authenticate("a-token")
	if !ok || p.Name != "alice" || p.Role != RoleAdministrator || strings.Join(p.Companies, ",") != "acme,globex" || p.All {
		t.Fatalf("alice: %+v %v", p, ok)
	}
	if p, ok := ts.authenticate("o-token"); !ok || !p.All || !p.InCompany("") || p.IsAdministrator() {
		t.Fatalf("olga: %+v %v", p, ok)
	}
	for _, bad := range []string{"", "a-token ", "A-TOKEN", "o-toke"} {
		if _, ok := ts.authenticate(bad); ok {
			t.Fatalf("%q authenticated", bad)
		}
	}
	hash := tokenLine("x", "observer", "acme", "secret")[len("x observer acme "):]
	for _, tc := range []struct{ file, want string }{
		{"", "T: no token"},
		{"# only\n", "T: no token"},
		{"\n" + tokenLine("a", "observer", "acme", "t") + "\nb observer acme\n", "T: line 3: 3 fields"},
		{"a observer acme " + hash[:63] + "\n", "T: line 1: SHA256HEX"},
		{"a observer acme " + hash + "zz\n", "T: line 1: SHA256HEX"},
		{"a admin acme " + hash + "\n", "T: line 1: ROLE"},
		{"a observer ac/me " + hash + "\n", "T: line 1: COMPANY"},
		{"a observer acme, " + hash + "\n", "T: line 1: COMPANY"},
		{"a observer acme " + hash + " extra\n", "T: line 1: 5 fields"},
		{"a/b observer acme " + hash + "\n", "T: line 1: NAME"},
		{tokenLine("a", "observer", "acme", "t") + "\n" + tokenLine("a", "observer", "acme", "u") + "\n", "T: line 2: NAME already"},
		{tokenLine("a", "observer", "acme", "t") + "\n" + tokenLine("b", "observer", "acme", "t") + "\n", "T: line 2: the token of an earlier line"},
	} {
		_, err := parseTokens("T", []byte(tc.file))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want %q", tc.file, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), hash[:12]) {
			t.Errorf("the hash in %q", err)
		}
	}
	if bearerToken("Bearer  x ") != "x" || bearerToken("bearer x") != "x" || bearerToken("Basic x") != "" || bearerToken("Bearer") != "" {
		t.Fatal("bearerToken")
	}
}

func TestIsLoopback(t *testing.T) {
	t.Parallel()
	for addr, want := range map[string]bool{"127.0.0.1:80": true, "127.9.8.7:0": true, "[::1]:8080": true, "localhost:1": true,
		"0.0.0.0:80": false, ":80": false, "[::]:80": false, "10.0.0.1:80": false, "example.com:80": false, "127.0.0.1": false} {
		if IsLoopback(addr) != want {
			t.Errorf("IsLoopback(%q) != %v", addr, want)
		}
	}
}

// Over its bound a principal gets 429 with Retry-After; others are not affected; a slot comes back.
func TestInflightLimit(t *testing.T) {
	t.Parallel()
	s := &Service{auth: &authenticator{insecure: true}, limit: newInflightLimit(2), log: discardLogger(), audit: discardLogger()}
	hold, entered := make(chan struct{}), make(chan struct{}, 2)
	h := s.audited(s.protect("test", anyReads(scopeNone), func(w http.ResponseWriter, r *http.Request) {
		entered <- struct{}{}
		<-hold
	}))
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/", nil))
		}()
	}
	<-entered
	<-entered
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
	if rec.Code != http.StatusTooManyRequests || rec.Header().Get("Retry-After") != "1" || !strings.Contains(rec.Body.String(), "too_many_requests") {
		t.Fatalf("third: %d %q %s", rec.Code, rec.Header().Get("Retry-After"), rec.Body.String())
	}
	if release, ok := s.limit.acquire("someone-else"); !ok {
		t.Fatal("another principal is limited")
	} else {
		release()
		release() // once only
	}
	close(hold)
	wg.Wait()
	if len(s.limit.n) != 0 {
		t.Fatalf("slots left: %v", s.limit.n)
	}
}

func TestScrubPaths(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		`claim store: open /var/lib/x/claims/a.json: permission denied`: `claim store: open <path>: permission denied`,
		`read "/tmp/a/b": no`:              `read "<path>": no`,
		`master tcp://127.0.0.1:4506 down`: `master tcp://127.0.0.1:4506 down`,
		`no route for GET /v1/x`:           `no route for GET <path>`,
	} {
		if got := scrubPaths(in); got != want {
			t.Errorf("scrubPaths(%q) = %q, want %q", in, got, want)
		}
	}
}

func discardLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// The http.Server's failed TLS handshakes are counted per source, one audit line per interval, not one
// log line each; other server errors reach the service's log.
func TestServerErrorLogCountsHandshakes(t *testing.T) {
	t.Parallel()
	var audit, logs strings.Builder
	s := &Service{log: slog.New(slog.NewTextHandler(&logs, nil)), refusals: newRefusalCounter(slog.New(slog.NewJSONHandler(&audit, nil)), time.Hour)}
	l := s.ServerErrorLog()
	for range 1000 {
		l.Printf("http: TLS handshake error from 192.0.2.7:%d: tls: client didn't provide a certificate", 40000)
	}
	l.Printf("http: Accept error: too many open files; retrying in 5ms")
	s.refusals.flush()
	lines := strings.Split(strings.TrimSpace(audit.String()), "\n")
	if len(lines) != 1 || !strings.Contains(lines[0], `"source":"192.0.2.7"`) || !strings.Contains(lines[0], `"reason":"tls_handshake"`) ||
		!strings.Contains(lines[0], `"count":1000`) {
		t.Fatalf("audit: %q", audit.String())
	}
	if strings.Count(logs.String(), "\n") != 1 || !strings.Contains(logs.String(), "Accept error") {
		t.Fatalf("log: %q", logs.String())
	}
}

// TestEveryRequestHasADeadline: protect gives every request a deadline of RequestDeadline at most (only
// ping and readyz had one), except the event streams, which last until the request is final.
func TestEveryRequestHasADeadline(t *testing.T) {
	t.Parallel()
	s := &Service{auth: &authenticator{insecure: true}, limit: newInflightLimit(2), log: discardLogger(), audit: discardLogger()}
	for _, tc := range []struct {
		action string
		want   bool
	}{{"status", true}, {"start", true}, {"custom_save", true}, {"status_events", false}, {"custom_status_events", false}} {
		var deadline time.Time
		var has bool
		h := s.audited(s.protect(tc.action, anyReads(scopeNone), func(w http.ResponseWriter, r *http.Request) {
			deadline, has = r.Context().Deadline()
		}))
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/", nil))
		if has != tc.want || has && time.Until(deadline) > RequestDeadline {
			t.Errorf("%s: deadline %v (set %v), want set %v within %v", tc.action, deadline, has, tc.want, RequestDeadline)
		}
	}
}
