//go:build unix

package salt

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/cockroachdb/errors"
)

// TestUserKeyCacheFollowsTheFile: the key of an unchanged file comes from the cache, and any
// change of the file (rewrite in place, rename over it, chmod, a symlink in its place, removal)
// is seen on the next request, with every check of readKeyFile.
func TestUserKeyCacheFollowsTheFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := filepath.Join(dir, ".root_key")
	k1, k2, k3 := testUserKey("FIRST"), testUserKey("SECOND"), testUserKey("THIRD")
	if err := os.WriteFile(p, []byte(k1), 0o600); err != nil {
		t.Fatal(err)
	}
	a := UserKey("root", p).(userKeyAuth)
	// a file written just now is not cached (a rewrite within one tick could keep its times)
	if _, err := a.material(context.Background()); err != nil {
		t.Fatal(err)
	}
	if a.cache.key != "" {
		t.Fatal("a key file changed just now was cached")
	}
	// from here the file counts as stable after 1 ms, and every change below comes more than a
	// clock tick after the previous one, as changes of a real key file do
	a.cache.stable = time.Millisecond
	// file time stamps: the kernel's coarse clock must tick between two changes (behaviour, not ordering)
	tick := func() { time.Sleep(30 * time.Millisecond) }
	tick()
	key := func() (string, error) {
		m, err := a.material(context.Background())
		return m.key, err
	}
	mustKey := func(step, want string) {
		t.Helper()
		if got, err := key(); err != nil || got != want {
			t.Fatalf("%s: got %.8q, %v; want %.8q", step, got, err, want)
		}
	}
	mustKey("first read", k1)
	// served from the cache: an unreadable file would fail a real read, the cache does not read it
	a.cache.mu.Lock()
	cached := a.cache.key
	a.cache.mu.Unlock()
	if cached != k1 {
		t.Fatal("the key was not cached")
	}
	mustKey("unchanged", k1)
	tick()

	// rewritten in place (same inode, same size)
	f, err := os.OpenFile(p, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte(k2), 0); err != nil {
		t.Fatal(err)
	}
	_ = f.Close()
	mustKey("rewritten in place", k2)
	tick()

	// renamed over (a new inode), as the master's key rotation may do
	tmp := filepath.Join(dir, "tmp")
	if err := os.WriteFile(tmp, []byte(k3), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, p); err != nil {
		t.Fatal(err)
	}
	mustKey("renamed over", k3)
	tick()

	// made group-writable: refused, not served from the cache
	if err := os.Chmod(p, 0o620); err != nil {
		t.Fatal(err)
	}
	if _, err := key(); !errors.Is(err, ErrKeyFile) {
		t.Fatalf("unsafe permissions after caching: %v", err)
	}
	if err := os.Chmod(p, 0o600); err != nil {
		t.Fatal(err)
	}
	tick()
	mustKey("permissions restored", k3)
	tick()

	// a symlink in its place (to a valid key file): refused
	other := filepath.Join(dir, "other")
	if err := os.WriteFile(other, []byte(k3), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(other, p); err != nil {
		t.Fatal(err)
	}
	if _, err := key(); !errors.Is(err, ErrKeyFile) {
		t.Fatalf("symlink after caching: %v", err)
	}

	// removed: refused
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	if _, err := key(); !errors.Is(err, ErrKeyFile) {
		t.Fatalf("removed after caching: %v", err)
	}
}
