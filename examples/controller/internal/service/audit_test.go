package service_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
)

// The audit trail: one JSON line per mutating call and per refusal of an authenticated caller, with the
// principal, role, company, action, minion, request ids, outcome, HTTP status and error code; the
// refusals of callers that did not authenticate counted per source and reason (one line per interval,
// written at the latest by Close); never a token or a hash.
func TestAuditTrail(t *testing.T) {
	t.Parallel()
	env := startSim(t)
	m := env.addMinion()
	s := env.server()
	start := "/v1/requests/configure/" + m.ID()
	id := uuid.NewString()

	// A wrong token, no token, an observer's start, an administrator's start, a read (not audited).
	const wrong = "wrong-token-value-123"
	req := s.request(t, nobody, "POST", start, nil)
	req.Header.Set("Authorization", "Bearer "+wrong)
	resp, err := s.http.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("wrong token: %d", resp.StatusCode)
	}
	if code := s.doAs(t, observer, "POST", start, strings.NewReader(`{"request_id":"`+id+`"}`), nil); code != http.StatusForbidden {
		t.Fatalf("observer: %d", code)
	}
	if code := s.doAs(t, admin, "POST", start, strings.NewReader(`{"request_id":"`+id+`"}`), nil); code != http.StatusCreated {
		t.Fatalf("admin: %d", code)
	}
	s.waitFinal(t, m.ID(), id)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.svc.Close(ctx); err != nil {
		t.Fatal(err)
	}

	var lines []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(s.audit.String()), "\n") {
		var v map[string]any
		if err := json.Unmarshal([]byte(l), &v); err != nil {
			t.Fatalf("not one JSON object: %q: %v", l, err)
		}
		lines = append(lines, v)
	}
	if len(lines) != 3 {
		t.Fatalf("%d audit lines, want 3 (reads are not audited):\n%s", len(lines), s.audit.String())
	}
	count := lines[2]
	if count["audit"] != true || count["action"] != "refusals" || count["reason"] != "unauthenticated" || count["count"] != float64(1) ||
		count["source"] != "127.0.0.1" || count["outcome"] != "refused" || count["http_status"] != float64(401) || count["company"] != "acme" {
		t.Fatalf("the refusal count: %v", count)
	}
	lines = lines[:2]
	for _, k := range []string{"audit", "principal", "role", "company", "action", "minion", "request_id", "http_request_id", "outcome", "http_status", "error_code"} {
		for i, l := range lines {
			if _, ok := l[k]; !ok {
				t.Fatalf("line %d lacks %q: %v", i, k, l)
			}
		}
	}
	want := []struct {
		principal, role, company, outcome, code string
		status                                  float64
	}{
		{observer, "observer", "acme", "refused", "forbidden_role", 403},
		{admin, "administrator", "acme", "ok", "", 201},
	}
	for i, w := range want {
		l := lines[i]
		if l["audit"] != true || l["action"] != "start" || l["minion"] != m.ID() || l["principal"] != w.principal || l["role"] != w.role ||
			l["company"] != w.company || l["outcome"] != w.outcome || l["error_code"] != w.code || l["http_status"] != w.status {
			t.Errorf("line %d: %v, want %+v", i, l, w)
		}
	}
	if lines[1]["request_id"] != id || lines[0]["request_id"] != "" {
		t.Errorf("request ids: %v / %v", lines[1]["request_id"], lines[0]["request_id"])
	}
	all := s.audit.String() + s.logs.String()
	for name, tok := range s.tokens {
		if strings.Contains(all, tok) {
			t.Fatalf("the token of %s is in the logs", name)
		}
	}
	if strings.Contains(all, wrong) || strings.Contains(all, "Bearer") {
		t.Fatal("a presented token is in the logs")
	}
}
