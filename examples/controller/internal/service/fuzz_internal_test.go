package service

import (
	"bytes"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/oduflow/oduflow-go/examples/internal/oduflowenv"
)

// A token file of any content: never a panic; a refusal names the variable and a line, never a field of
// the file long enough to be a hash or a token.
func FuzzTokenFile(f *testing.F) {
	f.Add([]byte(tokenLine("alice", "administrator", "acme", "t") + "\n"))
	f.Add([]byte("# c\n\nbob observer * " + strings.Repeat("0", 64) + "\n"))
	f.Add([]byte("a b c d e\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		ts, err := parseTokens("ODUFLOW_AUTH_TOKENS", b)
		if err != nil {
			msg := err.Error()
			if !strings.HasPrefix(msg, "ODUFLOW_AUTH_TOKENS: ") {
				t.Fatalf("message %q", msg)
			}
			for _, field := range strings.Fields(string(b)) {
				if len(field) >= 16 && strings.Contains(msg, field) {
					t.Fatalf("the message %q carries the field %q", msg, field)
				}
			}
			return
		}
		for _, e := range ts.entries {
			if e.principal.Name == "" || (e.principal.Role != RoleAdministrator && e.principal.Role != RoleObserver) ||
				(!e.principal.All && len(e.principal.Companies) == 0) {
				t.Fatalf("accepted %+v", e.principal)
			}
		}
		_, _ = ts.authenticate(string(b))
	})
}

// A JSON body of any content and size: nil, a usage error (400) or a size error (413), never a panic.
func FuzzDecodeBody(f *testing.F) {
	f.Add([]byte(`{"request_id":"3f2a7c4e-9b1d-4e8a-a6f0-1c2d3e4f5a6b","again":true}`), false)
	f.Add([]byte(`{"request_id":`), true)
	f.Add([]byte(`{} {}`), false)
	f.Add([]byte(""), true)
	f.Add(bytes.Repeat([]byte(" "), 5000), true)
	f.Fuzz(func(t *testing.T, b []byte, empty bool) {
		r := httptest.NewRequest("POST", "/", bytes.NewReader(b))
		var in applyBody
		err := decodeBody(httptest.NewRecorder(), r, "op", MaxBodyBytes, empty, &in)
		if err == nil {
			return
		}
		var ce *oduflowenv.Error
		var tooLarge *http.MaxBytesError
		if !errors.As(err, &ce) && !errors.As(err, &tooLarge) {
			t.Fatalf("untyped error %v", err)
		}
		if code, _ := classify(err); code != http.StatusBadRequest && code != http.StatusRequestEntityTooLarge {
			t.Fatalf("%v: %d", err, code)
		}
	})
}
