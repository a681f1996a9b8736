package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Authentication is refused before anything starts: none configured, the insecure mode off loopback, a
// token file others may read, a malformed line (named by its number, never its hash). Exit status 2, one
// line.
func TestAuthConfigurationRefused(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	hash := strings.Repeat("ab", 32)
	write := func(name, content string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil { // the umask does not decide
			t.Fatal(err)
		}
		return p
	}
	readable := write("readable", "alice administrator acme "+hash+"\n", 0o644)
	malformed := write("malformed", "# principals\n\nalice administrator acme "+hash+"\nbob observer acme "+hash[:60]+"\n", 0o600)
	badRole := write("badrole", "alice root acme "+hash+"\n", 0o600)
	good := write("good", "alice administrator acme "+hash+"\n", 0o600)
	base := map[string]string{"ODUFLOW_SALT_MASTER": "tcp://127.0.0.1:1", "ODUFLOW_SALT_EVENTS": "tcp://127.0.0.1:2",
		"ODUFLOW_SALT_KEY_FILE": "/nonexistent/.root_key", "ODUFLOW_STATE_DIR": filepath.Join(dir, "claims"), "ODUFLOW_LISTEN": "127.0.0.1:0"}
	for _, tc := range []struct {
		name string
		set  map[string]string
		want string
	}{
		{"no authentication", nil, "no authentication configured: set ODUFLOW_AUTH_TOKENS, or ODUFLOW_TLS_CERT, ODUFLOW_TLS_KEY, ODUFLOW_TLS_CLIENT_CA and ODUFLOW_TLS_PRINCIPALS"},
		{"insecure on every interface", map[string]string{"ODUFLOW_INSECURE_NO_AUTH": "1", "ODUFLOW_LISTEN": "0.0.0.0:0"},
			`ODUFLOW_INSECURE_NO_AUTH=1 refused: ODUFLOW_LISTEN "0.0.0.0:0" is not a loopback address`},
		{"insecure on an empty host", map[string]string{"ODUFLOW_INSECURE_NO_AUTH": "1", "ODUFLOW_LISTEN": ":0"}, "is not a loopback address"},
		{"insecure value", map[string]string{"ODUFLOW_INSECURE_NO_AUTH": "yes"}, `ODUFLOW_INSECURE_NO_AUTH "yes": want 1 or unset`},
		{"insecure with tokens", map[string]string{"ODUFLOW_INSECURE_NO_AUTH": "1", "ODUFLOW_AUTH_TOKENS": good}, "choose one"},
		{"token file mode 0644", map[string]string{"ODUFLOW_AUTH_TOKENS": readable}, "ODUFLOW_AUTH_TOKENS: mode 0644 is group or world accessible"},
		{"malformed token line", map[string]string{"ODUFLOW_AUTH_TOKENS": malformed}, "ODUFLOW_AUTH_TOKENS: line 4: SHA256HEX: want 64 hex digits"},
		{"unknown role", map[string]string{"ODUFLOW_AUTH_TOKENS": badRole}, "ODUFLOW_AUTH_TOKENS: line 1: ROLE: want administrator or observer"},
		{"missing token file", map[string]string{"ODUFLOW_AUTH_TOKENS": filepath.Join(dir, "nothing")}, "ODUFLOW_AUTH_TOKENS: cannot open the file"},
		{"client CA without principals", map[string]string{"ODUFLOW_TLS_CERT": good, "ODUFLOW_TLS_KEY": good, "ODUFLOW_TLS_CLIENT_CA": good},
			"ODUFLOW_TLS_CLIENT_CA and ODUFLOW_TLS_PRINCIPALS: set both"},
		{"cert without key", map[string]string{"ODUFLOW_AUTH_TOKENS": good, "ODUFLOW_TLS_CERT": good}, "ODUFLOW_TLS_CERT and ODUFLOW_TLS_KEY: set both"},
		{"max inflight", map[string]string{"ODUFLOW_AUTH_TOKENS": good, "ODUFLOW_MAX_INFLIGHT_PER_PRINCIPAL": "0"}, "want a positive integer"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := map[string]string{}
			for k, v := range base {
				env[k] = v
			}
			for k, v := range tc.set {
				env[k] = v
			}
			var stderr bytes.Buffer
			code := run(context.Background(), func(k string) string { return env[k] }, &stderr)
			out := strings.ReplaceAll(stderr.String(), `\"`, `"`)
			if code != 2 || !strings.Contains(out, tc.want) || strings.Count(strings.TrimSpace(out), "\n") != 0 {
				t.Fatalf("exit %d, stderr %q; want 2 and one line with %q", code, out, tc.want)
			}
			if strings.Contains(out, hash[:16]) || strings.Contains(out, dir) {
				t.Fatalf("a hash or a path in the message: %q", out)
			}
		})
	}
}
