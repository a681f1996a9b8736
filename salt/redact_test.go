package salt

import (
	"bytes"
	"fmt"
	"log/slog"
	"strings"
	"testing"
)

// Printing or logging a credential holder in any form never shows the secret.
func TestCredentialHoldersNeverPrintSecrets(t *testing.T) {
	t.Parallel()
	const pw, tok = "PW-SECRET-42", "TOKEN-SECRET-42"
	eauth := Eauth("pam", "alice", pw)
	static := staticToken(tok)
	withEauth, err := NewClient("tcp://127.0.0.1:4506", WithAuth(eauth))
	if err != nil {
		t.Fatal(err)
	}
	withToken, _ := NewClient("tcp://127.0.0.1:4506", WithAuth(TokenAuth(static)))
	src := NewTokenSource(withEauth, "pam", "alice", pw)
	src.tok = &Token{Token: tok, Name: "alice"} // as after a first login
	withSource, _ := NewClient("tcp://127.0.0.1:4506", WithAuth(TokenAuth(src)))
	values := []any{eauth, TokenAuth(static), static, withEauth, withToken, withSource, src,
		UserKey("root", "/var/cache/salt/master/.root_key")}

	var out bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&out, nil))
	jlogger := slog.New(slog.NewJSONHandler(&out, nil))
	for i, v := range values {
		for _, verb := range []string{"%v", "%+v", "%#v", "%s"} {
			fmt.Fprintf(&out, verb+"\n", v)
		}
		logger.Info("value", "i", i, "v", v)
		jlogger.Info("value", "i", i, "v", v)
	}
	for _, secret := range []string{pw, tok} {
		if strings.Contains(out.String(), secret) {
			t.Fatalf("%s printed:\n%s", secret, out.String())
		}
	}
	// The descriptions stay useful.
	for _, want := range []string{"backend=pam", "username=alice", "addr=tcp://127.0.0.1:4506", "user=root"} {
		if !strings.Contains(out.String(), want) {
			t.Fatalf("%q missing from:\n%s", want, out.String())
		}
	}
}
