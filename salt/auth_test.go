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
	dir := t.TempDir()
	good := filepath.Join(dir, ".root_key")
	if err := os.WriteFile(good, []byte("SECRETKEY\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if k, err := readKeyFile(good); err != nil || k != "SECRETKEY" {
		t.Fatalf("%q %v", k, err)
	}
	link := filepath.Join(dir, "link")
	_ = os.Symlink(good, link)
	wide := filepath.Join(dir, "wide")
	_ = os.WriteFile(wide, []byte("SECRETKEY"), 0o644)
	_ = os.Chmod(wide, 0o644)
	gw := filepath.Join(dir, "gw")
	_ = os.WriteFile(gw, []byte("SECRETKEY"), 0o620)
	_ = os.Chmod(gw, 0o620)
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty")
	_ = os.WriteFile(empty, nil, 0o600)
	big := filepath.Join(dir, "big")
	_ = os.WriteFile(big, make([]byte, 10000), 0o600)
	for _, p := range []string{link, wide, gw, fifo, dir, empty, big, filepath.Join(dir, "missing")} {
		start := time.Now()
		_, err := readKeyFile(p)
		if !errors.Is(err, ErrKeyFile) {
			t.Errorf("%s accepted: %v", filepath.Base(p), err)
		}
		if err != nil && strings.Contains(err.Error(), "SECRETKEY") {
			t.Errorf("key in error")
		}
		if time.Since(start) > time.Second {
			t.Errorf("%s blocked", p)
		}
	}
}

func TestRenewingTokenSource(t *testing.T) {
	addr, seen := fakeMaster(t, "K")
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
