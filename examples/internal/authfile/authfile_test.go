//go:build unix

package authfile_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/oduflow/oduflow-go/examples/internal/authfile"
)

func TestRead(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, b []byte, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	ctx := context.Background()
	secret := write("secret", []byte("s"), 0o600)
	if b, err := authfile.Read(ctx, "E", secret, authfile.Options{Private: true}); err != nil || string(b) != "s" {
		t.Fatalf("0600 private: %q %v", b, err)
	}
	public := write("public", []byte("p"), 0o644)
	if _, err := authfile.Read(ctx, "E", public, authfile.Options{}); err != nil {
		t.Fatalf("0644 public: %v", err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, path string
		o          authfile.Options
		want       string
	}{
		{"0640 private", public, authfile.Options{Private: true}, "group or world accessible"},
		{"0664 public", write("gw", []byte("x"), 0o664), authfile.Options{}, "writable"},
		{"over the bound", write("big", make([]byte, 100), 0o600), authfile.Options{MaxBytes: 99}, "over 99 bytes"},
		{"a FIFO", fifo, authfile.Options{}, "not a regular file"},
		{"a directory", dir, authfile.Options{}, "not a regular file"},
		{"missing", filepath.Join(dir, "none"), authfile.Options{}, "cannot open"},
	} {
		_, err := authfile.Read(ctx, "E", tc.path, tc.o)
		var ae *authfile.Error
		if err == nil || !errors.As(err, &ae) || !errors.Is(err, authfile.ErrUnsafe) || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), dir) {
			t.Fatalf("%s: %v, want %q without the path", tc.name, err, tc.want)
		}
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := authfile.Read(cancelled, "E", secret, authfile.Options{}); err == nil {
		t.Fatal("read with an ended context")
	}
	// A link to a safe file in a safe directory is followed.
	link := filepath.Join(dir, "link")
	if err := os.Symlink("secret", link); err != nil {
		t.Fatal(err)
	}
	if _, err := authfile.Read(ctx, "E", link, authfile.Options{Private: true}); err != nil {
		t.Fatalf("a link to a safe file: %v", err)
	}
	// A file in a directory others can write (not sticky) is refused, even a safe one.
	open := filepath.Join(t.TempDir(), "open")
	if err := os.Mkdir(open, 0o700); err != nil || os.Chmod(open, 0o777) != nil {
		t.Fatal(err)
	}
	inOpen := filepath.Join(open, "f")
	if err := os.WriteFile(inOpen, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := authfile.Read(ctx, "E", inOpen, authfile.Options{}); err == nil || !strings.Contains(err.Error(), "others can write") {
		t.Fatalf("in a 0777 directory: %v", err)
	}
	t0 := time.Now()
	if _, err := authfile.Read(ctx, "E", fifo, authfile.Options{}); err == nil || time.Since(t0) > time.Second {
		t.Fatalf("a FIFO: %v after %v", err, time.Since(t0))
	}
}

func TestCheckDir(t *testing.T) {
	ctx := context.Background()
	base := t.TempDir()
	if err := authfile.CheckDir(ctx, "D", filepath.Join(base, "new")); err != nil {
		t.Fatalf("a directory to create: %v", err)
	}
	open := filepath.Join(base, "open")
	if err := os.Mkdir(open, 0o700); err != nil || os.Chmod(open, 0o777) != nil {
		t.Fatal(err)
	}
	for name, p := range map[string]string{"0777": open, "below 0777": filepath.Join(open, "new")} {
		if err := authfile.CheckDir(ctx, "D", p); err == nil || !errors.Is(err, authfile.ErrUnsafe) {
			t.Fatalf("%s: %v", name, err)
		}
	}
}
