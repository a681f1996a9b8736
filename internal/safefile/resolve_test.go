package safefile

import (
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"golang.org/x/sys/unix"
)

// resolveMode is one way a store opens its directory.
type resolveMode struct {
	name string
	opt  StoreOption
}

// resolveModes are the kernel's one openat2 (skipped, saying why, where the kernel has none) and the
// component walk a kernel without openat2 uses.
func resolveModes(t *testing.T) []resolveMode {
	t.Helper()
	modes := []resolveMode{{"walk", withWalkOnly()}}
	if haveOpenat2() {
		modes = append(modes, resolveMode{"openat2", func(*storeConfig) {}})
	} else {
		t.Log("this kernel has no openat2: only the component walk is tested")
	}
	return modes
}

// withWalkOnly makes a store open its directory by the component walk, as on a kernel before 5.6.
func withWalkOnly() StoreOption {
	return func(c *storeConfig) {
		c.resolve = &dirResolver{}
		c.resolve.off.Store(true)
	}
}

func haveOpenat2() bool {
	fd, err := unix.Openat2(unix.AT_FDCWD, "/", &unix.OpenHow{Flags: unix.O_RDONLY | unix.O_CLOEXEC})
	if err != nil {
		return false
	}
	_ = unix.Close(fd)
	return true
}

// TestStoreOpensItsDirectoryInOneCall: on a kernel with openat2, no write, read, lock or sub-store
// open walks the path component by component; a symlink planted in any component afterwards is still
// refused (the kernel refuses it, and the walk that follows names it).
func TestStoreOpensItsDirectoryInOneCall(t *testing.T) {
	if !haveOpenat2() {
		t.Skip("this kernel has no openat2(2) (Linux 5.6+): every store walks its path")
	}
	var walks atomic.Int64
	hook := func(stage string) {
		if stage == stageDirWalk {
			walks.Add(1)
		}
	}
	base := t.TempDir()
	parent := filepath.Join(base, "parent")
	s, err := OpenStore(filepath.Join(parent, "store"), WithCreate(), WithStageHook(hook))
	if err != nil {
		t.Fatal(err)
	}
	walks.Store(0) // creating the directories walked; everything after must not
	if err := s.WriteAtomic("rec", []byte("x")); err != nil {
		t.Fatal(err)
	}
	if b, err := s.Read("rec"); err != nil || string(b) != "x" {
		t.Fatalf("Read: %q, %v", b, err)
	}
	l, err := s.TryLock("rec")
	if err != nil {
		t.Fatal(err)
	}
	_ = l.Release()
	sub, _, err := s.Sub("client", true)
	if err != nil {
		t.Fatal(err)
	}
	walks.Store(0) // Sub created its directory by walking; opening it again must not
	if _, _, err := s.Sub("client", false); err != nil {
		t.Fatal(err)
	}
	if err := sub.WriteAtomic("entry", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := s.List(""); err != nil {
		t.Fatal(err)
	}
	if n := walks.Load(); n != 0 {
		t.Fatalf("%d component walks with openat2 available, want 0", n)
	}

	// A parent component swapped for a symlink to the same tree: every store refuses it.
	moved := parent + ".moved"
	if err := os.Rename(parent, moved); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(moved, parent); err != nil {
		t.Fatal(err)
	}
	_, err = s.Read("rec")
	wantUnsafe(t, err, "symlink")
	wantUnsafe(t, sub.WriteAtomic("entry", []byte("y")), "symlink")
	_, _, err = s.Sub("client", false)
	wantUnsafe(t, err, "symlink")
	if walks.Load() == 0 {
		t.Fatal("a refused openat2 did not fall back to the walk that names the symlink")
	}
	if b, err := os.ReadFile(filepath.Join(moved, "store", "client", "entry")); err != nil || len(b) != 0 {
		t.Fatalf("written through the symlink: %q, %v", b, err)
	}
}

// TestStoreWithoutOpenat2 is a kernel before 5.6 (ENOSYS) and a seccomp filter that refuses the call
// (EPERM): the first refusal turns the fast path off for the store and the stores Sub opens, which walk
// from then on, and still refuse a symlink.
func TestStoreWithoutOpenat2(t *testing.T) {
	for _, refusal := range []unix.Errno{unix.ENOSYS, unix.EPERM} {
		t.Run(refusal.Error(), func(t *testing.T) {
			var calls, walks atomic.Int64
			r := &dirResolver{openat2: func(int, string, *unix.OpenHow) (int, error) {
				calls.Add(1)
				return -1, refusal
			}}
			hook := func(stage string) {
				if stage == stageDirWalk {
					walks.Add(1)
				}
			}
			dir := filepath.Join(t.TempDir(), "store")
			s, err := OpenStore(dir, WithCreate(), WithStageHook(hook), func(c *storeConfig) { c.resolve = r })
			if err != nil {
				t.Fatal(err)
			}
			sub, _, err := s.Sub("client", true)
			if err != nil {
				t.Fatal(err)
			}
			for range 3 {
				if err := s.WriteAtomic("rec", []byte("x")); err != nil {
					t.Fatal(err)
				}
				if err := sub.WriteAtomic("entry", nil); err != nil {
					t.Fatal(err)
				}
			}
			if n := calls.Load(); n != 1 {
				t.Fatalf("openat2 tried %d times after a refusal, want 1", n)
			}
			if walks.Load() < 7 {
				t.Fatalf("%d walks for 8 resolutions without openat2", walks.Load())
			}
			moved := dir + ".moved"
			if err := os.Rename(dir, moved); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(moved, dir); err != nil {
				t.Fatal(err)
			}
			wantUnsafe(t, sub.WriteAtomic("entry", []byte("y")), "symlink")
		})
	}
}
