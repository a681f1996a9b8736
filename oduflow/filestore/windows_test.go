package filestore

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/cockroachdb/errors"

	"github.com/oduflow/oduflow-go/oduflow/claims"
)

// TestStatusWindowsAtOpen: the windows are the store's from Open on (WithStatusWindows, else the
// defaults, for Open and OpenExisting alike); a window that is not positive is refused with
// claims.ErrInvalidInput before the directory is created.
func TestStatusWindowsAtOpen(t *testing.T) {
	dir := claimDir(t)
	fs, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if g, x := fs.StatusWindows(); g != defaultLaunchGrace || x != defaultStatusExpiry {
		t.Fatalf("default windows %v/%v, want %v/%v", g, x, defaultLaunchGrace, defaultStatusExpiry)
	}
	for _, open := range []func(string, ...Option) (*Store, error){Open, OpenExisting} {
		st, err := open(dir, WithStatusWindows(3*time.Second, 10*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		if g, x := st.StatusWindows(); g != 3*time.Second || x != 10*time.Second {
			t.Fatalf("windows %v/%v, want 3s/10s", g, x)
		}
	}
	for _, w := range [][2]time.Duration{{0, time.Second}, {time.Second, 0}, {-time.Second, time.Second}} {
		fresh := filepath.Join(t.TempDir(), "claims")
		if _, err := Open(fresh, WithStatusWindows(w[0], w[1])); !errors.Is(err, claims.ErrInvalidInput) {
			t.Fatalf("windows %v: %v, want ErrInvalidInput", w, err)
		}
		if _, err := os.Stat(fresh); !os.IsNotExist(err) {
			t.Fatalf("windows %v refused, yet the directory was made (%v)", w, err)
		}
	}
}
