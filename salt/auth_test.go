package salt

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/errors"
)

func TestReadKeyFileSafety(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	key := testUserKey("SECRETKEY")
	write := func(name, content string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for name, content := range map[string]string{"bare": key, "newline": key + "\n"} {
		if k, err := readKeyFile(write(name, content, 0o600)); err != nil || k != key {
			t.Fatalf("%s: %q %v", name, k, err)
		}
	}
	link := filepath.Join(dir, "link")
	_ = os.Symlink(filepath.Join(dir, "bare"), link)
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	refused := []string{link, fifo, dir, filepath.Join(dir, "missing"),
		write("wide", key, 0o644), write("gw", key, 0o620),
		write("empty", "", 0o600), write("big", strings.Repeat("A", 10000), 0o600),
		write("shadow", "root:$6$SECRETKEY$abcdefghijklmnop:19000:0:99999:7:::\n", 0o600),
		write("two-newlines", key+"\n\n", 0o600), write("crlf", key+"\r\n", 0o600),
		write("space", key+" ", 0o600), write("short", key[:75], 0o600), write("long", key+"A", 0o600),
		write("not-base64", strings.Repeat("*", 76), 0o600),
		write("url-alphabet", strings.Repeat("-", 76), 0o600),
		write("non-canonical", key[:74]+"B=", 0o600), // stray bits in the last group: not what Python wrote
		write("leading-newline", "\n"+key, 0o600)}
	for _, p := range refused {
		start := time.Now()
		_, err := readKeyFile(p)
		if !errors.Is(err, ErrKeyFile) {
			t.Errorf("%s accepted: %v", filepath.Base(p), err)
		}
		if err != nil && (strings.Contains(err.Error(), "SECRETKEY") || strings.Contains(err.Error(), key[:20])) {
			t.Errorf("%s: content in error %q", filepath.Base(p), err)
		}
		if time.Since(start) > time.Second {
			t.Errorf("%s blocked", p)
		}
	}
}

func TestRenewingTokenSource(t *testing.T) {
	t.Parallel()
	addr, seen := fakeMaster(t, testUserKey("K"))
	c, _ := NewClient(addr)
	now := time.Now()
	clock := now
	src := NewTokenSource(c, "file", "u", "pw", WithRenewBefore(time.Minute), WithTokenClock(func() time.Time { return clock }))
	ctx := context.Background()
	if src.Current() != nil {
		t.Fatal("token before first use")
	}
	for i := 0; i < 3; i++ {
		if tok, err := src.Token(ctx); err != nil || tok != "tok" {
			t.Fatal(tok, err)
		}
	}
	count := func() int {
		n := 0
		for _, e := range *seen {
			if e["load"].(map[string]any)["cmd"] == "mk_token" {
				n++
			}
		}
		return n
	}
	if count() != 1 {
		t.Fatalf("mk_token called %d times", count())
	}
	clock = now.Add(12*time.Hour - 30*time.Second) // within renew window
	if _, err := src.Token(ctx); err != nil || count() != 2 {
		t.Fatalf("no renewal: %v %d", err, count())
	}
	src.Invalidate()
	if _, err := src.Token(ctx); err != nil || count() != 3 {
		t.Fatal("invalidate did not force a login")
	}
	bad := NewTokenSource(c, "file", "u", "wrong")
	if _, err := bad.Token(ctx); !errors.Is(err, ErrAuthentication) {
		t.Fatalf("bad password: %v", err)
	}
	tc, _ := NewClient(addr, WithAuth(TokenAuth(bad)))
	if _, err := tc.Publish(ctx, PublishRequest{Target: ListTarget("m"), Fun: "test.ping"}); !errors.Is(err, ErrAuthentication) || !IsNotPublished(err) {
		t.Fatalf("publish with failing token source: %v", err)
	}
	if s := src.Current().String(); strings.Contains(s, "tok}") || !strings.Contains(s, "REDACTED") {
		t.Fatalf("token printed: %s", s)
	}
}
