package service_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// Any method, path, body and caller through the whole handler (on the simulator): never a panic, never
// a 500, every error a JSON object with a reason and no file path; without a principal nothing but the
// open routes answers 2xx, and an observer never writes.
func FuzzHandler(f *testing.F) {
	env := startSim(f)
	m := env.addMinion()
	s := env.server()
	h := s.svc.Handler()
	id := "3f2a7c4e-9b1d-4e8a-a6f0-1c2d3e4f5a6b"
	f.Add(uint8(4), "POST", "/v1/requests/configure/"+m.ID(), []byte(`{"request_id":"`+id+`"}`))
	f.Add(uint8(1), "GET", "/v1/requests/configure/"+m.ID()+"/"+id, []byte(nil))
	f.Add(uint8(0), "POST", "/v1/custom-states", []byte(`{"company":"acme","name":"x","source":"a: b"}`))
	f.Add(uint8(4), "POST", "/v1/custom-states/validate", []byte(`{"source":"x:\n  cmd.run:\n    - name: {{ evil }}\n"}`))
	f.Add(uint8(4), "PUT", "/v1/minions/"+m.ID()+"/custom-states/nope", []byte(nil))
	f.Add(uint8(2), "GET", "/v1/minions/"+m.ID()+"/ping", []byte(nil))
	f.Add(uint8(4), "GET", "/v1/minions/../../etc/passwd/ping", []byte(nil))
	f.Fuzz(func(t *testing.T, who uint8, method, path string, body []byte) {
		if !strings.HasPrefix(path, "/") || len(path) > 4096 {
			return
		}
		req, err := http.NewRequest(method, "http://controller"+path, bytes.NewReader(body))
		if err != nil {
			return
		}
		caller := callers[int(who)%len(callers)]
		if caller != nobody {
			req.Header.Set("Authorization", "Bearer "+s.tokens[caller])
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		code, out := rec.Code, rec.Body.Bytes()
		if code >= 500 && code != http.StatusServiceUnavailable && code != http.StatusGatewayTimeout {
			t.Fatalf("%s %q as %q: %d %s", method, path, caller, code, out)
		}
		if bytes.Contains(out, []byte(env.claims)) || bytes.Contains(out, []byte(env.catalog)) {
			t.Fatalf("a file path in %s", out)
		}
		if code >= 400 && code != http.StatusMethodNotAllowed && rec.Header().Get("Location") == "" {
			var e struct {
				Reason string `json:"reason"`
			}
			if err := json.Unmarshal(out, &e); err != nil || e.Reason == "" {
				t.Fatalf("%s %q: %d not a JSON error: %q", method, path, code, out)
			}
		}
		open := req.URL.Path == "/healthz" || req.URL.Path == "/readyz"
		if code < 300 && caller == nobody && !open {
			t.Fatalf("%s %q answered %d without a principal", method, path, code)
		}
		if code < 300 && caller == observer && method != "GET" && method != "HEAD" && !open {
			t.Fatalf("%s %q answered %d to an observer", method, path, code)
		}
	})
}
