package safefile

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/cockroachdb/errors"
	"golang.org/x/sys/unix"
)

const nobody = 65534

func wantUnsafe(t *testing.T, err error, reason string) {
	t.Helper()
	var ue *UnsafePathError
	if !errors.Is(err, ErrUnsafePath) || !errors.As(err, &ue) {
		t.Fatalf("err = %v, want *UnsafePathError(%s)", err, reason)
	}
	if ue.Reason != reason {
		t.Fatalf("reason = %q (%v), want %q", ue.Reason, err, reason)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// assertAllRefused checks that every store operation on name refuses with
// reason and that the file at path keeps its content.
func assertAllRefused(t *testing.T, s *Store, name, reason, path, content string) {
	t.Helper()
	_, err := s.Read(name)
	wantUnsafe(t, err, reason)
	wantUnsafe(t, s.WriteAtomic(name, []byte("overwritten")), reason)
	wantUnsafe(t, s.Remove(name), reason)
	if err := s.CreateExclusive(name, []byte("overwritten")); !errors.Is(err, ErrExist) {
		t.Fatalf("CreateExclusive: %v", err)
	}
	if got := readFile(t, path); got != content {
		t.Fatalf("%s was overwritten: %q", path, got)
	}
}

func TestHostileRecords(t *testing.T) {
	outside := filepath.Join(t.TempDir(), "outside")
	if err := os.WriteFile(outside, []byte("victim"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Run("symlinked file", func(t *testing.T) {
		s := newStore(t)
		p := filepath.Join(s.Dir(), "rec")
		if err := os.Symlink(outside, p); err != nil {
			t.Fatal(err)
		}
		assertAllRefused(t, s, "rec", "symlink", outside, "victim")
		if fi, err := os.Lstat(p); err != nil || fi.Mode()&os.ModeSymlink == 0 {
			t.Fatalf("symlink replaced: %v", err)
		}
	})
	t.Run("dangling symlink", func(t *testing.T) {
		s := newStore(t)
		target := filepath.Join(t.TempDir(), "nothing")
		if err := os.Symlink(target, filepath.Join(s.Dir(), "rec")); err != nil {
			t.Fatal(err)
		}
		_, err := s.Read("rec")
		wantUnsafe(t, err, "symlink")
		wantUnsafe(t, s.WriteAtomic("rec", []byte("x")), "symlink")
		if err := s.CreateExclusive("rec", []byte("x")); !errors.Is(err, ErrExist) {
			t.Fatalf("CreateExclusive: %v", err)
		}
		if _, err := os.Stat(target); !os.IsNotExist(err) {
			t.Fatal("write went through a dangling symlink")
		}
	})
	t.Run("hard link", func(t *testing.T) {
		s := newStore(t)
		p := filepath.Join(s.Dir(), "rec")
		if err := os.WriteFile(p, []byte("linked"), 0o600); err != nil {
			t.Fatal(err)
		}
		other := filepath.Join(s.Dir(), "..", "second-link")
		if err := os.Link(p, other); err != nil {
			t.Fatal(err)
		}
		assertAllRefused(t, s, "rec", "multiple_links", other, "linked")
	})
	t.Run("mode 0644 file", func(t *testing.T) {
		s := newStore(t)
		p := filepath.Join(s.Dir(), "rec")
		if err := os.WriteFile(p, []byte("shared"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, 0o644); err != nil {
			t.Fatal(err)
		}
		assertAllRefused(t, s, "rec", "permissions", p, "shared")
	})
	t.Run("mode 0640 file", func(t *testing.T) {
		s := newStore(t)
		p := filepath.Join(s.Dir(), "rec")
		if err := os.WriteFile(p, []byte("group"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, 0o640); err != nil {
			t.Fatal(err)
		}
		assertAllRefused(t, s, "rec", "permissions", p, "group")
	})
	t.Run("foreign owner file", func(t *testing.T) {
		s := newStore(t)
		p := filepath.Join(s.Dir(), "rec")
		if err := os.WriteFile(p, []byte("theirs"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(p, nobody, nobody); err != nil {
			t.Skipf("chown needs root: %v", err)
		}
		assertAllRefused(t, s, "rec", "foreign_owner", p, "theirs")
	})
	t.Run("fifo", func(t *testing.T) {
		s := newStore(t)
		p := filepath.Join(s.Dir(), "rec")
		if err := unix.Mkfifo(p, 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := s.Read("rec")
		wantUnsafe(t, err, "not_regular")
		wantUnsafe(t, s.WriteAtomic("rec", []byte("x")), "not_regular")
	})
	t.Run("directory as record", func(t *testing.T) {
		s := newStore(t)
		if err := os.Mkdir(filepath.Join(s.Dir(), "rec"), 0o700); err != nil {
			t.Fatal(err)
		}
		_, err := s.Read("rec")
		wantUnsafe(t, err, "not_regular")
		wantUnsafe(t, s.WriteAtomic("rec", []byte("x")), "not_regular")
	})
}

// TestHostileDirectories runs every case twice: with the store's directory opened by one openat2
// (the kernel refusing symlinks in every component) and by the component walk, the fallback of a
// kernel without openat2.
func TestHostileDirectories(t *testing.T) {
	for _, m := range resolveModes(t) {
		t.Run(m.name, func(t *testing.T) { hostileDirectories(t, m.opt) })
	}
}

func hostileDirectories(t *testing.T, mode StoreOption) {
	t.Run("symlinked store dir", func(t *testing.T) {
		base := t.TempDir()
		realDir := filepath.Join(base, "real")
		if err := os.Mkdir(realDir, 0o700); err != nil {
			t.Fatal(err)
		}
		link := filepath.Join(base, "link")
		if err := os.Symlink(realDir, link); err != nil {
			t.Fatal(err)
		}
		_, err := OpenStore(link, mode)
		wantUnsafe(t, err, "symlink")
		_, err = OpenStore(link, WithCreate(), mode)
		wantUnsafe(t, err, "symlink")
	})
	t.Run("symlink in parent component", func(t *testing.T) {
		base := t.TempDir()
		if err := os.MkdirAll(filepath.Join(base, "real", "store"), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(filepath.Join(base, "real"), filepath.Join(base, "link")); err != nil {
			t.Fatal(err)
		}
		_, err := OpenStore(filepath.Join(base, "link", "store"), mode)
		wantUnsafe(t, err, "symlink")
		_, err = OpenStore(filepath.Join(base, "link", "new"), WithCreate(), mode)
		wantUnsafe(t, err, "symlink")
		if _, err := os.Stat(filepath.Join(base, "real", "new")); !os.IsNotExist(err) {
			t.Fatal("created through a symlink")
		}
	})
	t.Run("dir swapped for symlink after open", func(t *testing.T) {
		s := newStore(t, mode)
		if err := s.WriteAtomic("rec", []byte("before")); err != nil {
			t.Fatal(err)
		}
		moved := s.Dir() + ".moved"
		if err := os.Rename(s.Dir(), moved); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(moved, s.Dir()); err != nil {
			t.Fatal(err)
		}
		_, err := s.Read("rec")
		wantUnsafe(t, err, "symlink")
		wantUnsafe(t, s.WriteAtomic("rec", []byte("after")), "symlink")
		_, err = s.TryLock("rec")
		wantUnsafe(t, err, "symlink")
		if got := readFile(t, filepath.Join(moved, "rec")); got != "before" {
			t.Fatalf("written through swapped dir: %q", got)
		}
	})
	t.Run("mode 0755 dir", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "s")
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		_, err := OpenStore(dir, mode)
		wantUnsafe(t, err, "permissions")
		_, err = OpenStore(dir, WithCreate(), mode)
		wantUnsafe(t, err, "permissions")
		if err := os.Chmod(dir, 0o700|os.ModeSetgid); err != nil {
			t.Fatal(err)
		}
		_, err = OpenStore(dir, mode)
		wantUnsafe(t, err, "permissions")
	})
	t.Run("store path is a file", func(t *testing.T) {
		p := filepath.Join(t.TempDir(), "f")
		if err := os.WriteFile(p, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := OpenStore(p, mode)
		wantUnsafe(t, err, "not_directory")
	})
	t.Run("foreign owner dir", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "s")
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(dir, nobody, nobody); err != nil {
			t.Skipf("chown needs root: %v", err)
		}
		_, err := OpenStore(dir, mode)
		wantUnsafe(t, err, "foreign_owner")
		// The same directory is fine for its owner; files we create are
		// given to that owner.
		s, err := OpenStore(dir, WithOwner(nobody), mode)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.WriteAtomic("rec", []byte("x")); err != nil {
			t.Fatal(err)
		}
		if err := s.CreateExclusive("rec2", []byte("y")); err != nil {
			t.Fatal(err)
		}
		l, err := s.TryLock("rec")
		if err != nil {
			t.Fatal(err)
		}
		_ = l.Release()
		for _, n := range []string{"rec", "rec2", "rec.lock"} {
			var st unix.Stat_t
			if err := unix.Stat(filepath.Join(dir, n), &st); err != nil || st.Uid != nobody {
				t.Fatalf("%s: uid %d, %v", n, st.Uid, err)
			}
		}
		if b, err := s.Read("rec"); err != nil || string(b) != "x" {
			t.Fatalf("Read: %q, %v", b, err)
		}
		// A root-owned file in nobody's store is foreign.
		p := filepath.Join(dir, "rootfile")
		if err := os.WriteFile(p, []byte("r"), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err = s.Read("rootfile")
		wantUnsafe(t, err, "foreign_owner")
		// WithCreate gives a new directory to the expected owner.
		nd := filepath.Join(t.TempDir(), "new")
		if _, err := OpenStore(nd, WithCreate(), WithOwner(nobody), mode); err != nil {
			t.Fatal(err)
		}
		var st unix.Stat_t
		if err := unix.Stat(nd, &st); err != nil || st.Uid != nobody || st.Mode&0o7777 != 0o700 {
			t.Fatalf("created dir: uid %d mode %o, %v", st.Uid, st.Mode&0o7777, err)
		}
	})
}

func TestHostileLockFiles(t *testing.T) {
	s := newStore(t)
	outside := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(outside, []byte("v"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(s.Dir(), "a.lock")); err != nil {
		t.Fatal(err)
	}
	_, err := s.TryLock("a")
	wantUnsafe(t, err, "symlink")
	_, err = s.IsLocked("a")
	wantUnsafe(t, err, "symlink")
	p := filepath.Join(s.Dir(), "b.lock")
	if err := os.WriteFile(p, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, 0o666); err != nil {
		t.Fatal(err)
	}
	_, err = s.TryLock("b")
	wantUnsafe(t, err, "permissions")
	_, err = s.IsLocked("b")
	wantUnsafe(t, err, "permissions")
	if err := os.Link(filepath.Join(s.Dir(), "b.lock"), filepath.Join(s.Dir(), "c.lock")); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = s.TryLock("c")
	wantUnsafe(t, err, "multiple_links")
}
