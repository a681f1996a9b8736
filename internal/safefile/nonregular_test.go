package safefile

import (
	stderrors "errors"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// noHang runs op and fails the test if it has not returned within ten seconds (room for a loaded machine): an open of a FIFO without
// O_NONBLOCK waits for a writer forever.
func noHang(t *testing.T, what string, op func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- op() }()
	select {
	case err := <-done:
		return err
	case <-time.After(10 * time.Second):
		t.Fatalf("%s hangs on a non-regular file", what)
		return nil
	}
}

// plant makes a FIFO or a listening unix socket at path.
func plant(t *testing.T, kind, path string) {
	t.Helper()
	switch kind {
	case "fifo":
		if err := unix.Mkfifo(path, 0o600); err != nil {
			t.Fatal(err)
		}
	case "socket":
		// Socket paths are limited to 108 bytes: bind in a short directory, then move it in place.
		short, err := os.MkdirTemp("", "sock")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = os.RemoveAll(short) })
		l, err := net.Listen("unix", filepath.Join(short, "s"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = l.Close() })
		if err := os.Rename(filepath.Join(short, "s"), path); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(path, 0o600); err != nil {
			t.Fatal(err)
		}
	default:
		t.Fatalf("unknown kind %s", kind)
	}
}

// wantNotRegular checks the typed error with the standard library only: callers use import "errors".
func wantNotRegular(t *testing.T, what string, err error) {
	t.Helper()
	var ue *UnsafePathError
	if !stderrors.Is(err, ErrNotRegular) || !stderrors.Is(err, ErrUnsafePath) || !stderrors.As(err, &ue) || ue.Reason != "not_regular" {
		t.Fatalf("%s: err = %v, want ErrNotRegular", what, err)
	}
}

func TestNonRegularRecordsRefusedAtOnce(t *testing.T) {
	for _, kind := range []string{"fifo", "socket"} {
		t.Run(kind, func(t *testing.T) {
			s := newStore(t)
			plant(t, kind, filepath.Join(s.Dir(), "rec"))
			wantNotRegular(t, "Read", noHang(t, "Read", func() error { _, err := s.Read("rec"); return err }))
			wantNotRegular(t, "WriteAtomic", noHang(t, "WriteAtomic", func() error { return s.WriteAtomic("rec", []byte("x")) }))
			wantNotRegular(t, "Remove", noHang(t, "Remove", func() error { return s.Remove("rec") }))
			if err := noHang(t, "CreateExclusive", func() error { return s.CreateExclusive("rec", []byte("x")) }); !stderrors.Is(err, ErrExist) {
				t.Fatalf("CreateExclusive: %v", err)
			}
			var st unix.Stat_t
			if err := unix.Lstat(filepath.Join(s.Dir(), "rec"), &st); err != nil || st.Mode&unix.S_IFMT == unix.S_IFREG {
				t.Fatalf("planted %s was replaced (%v)", kind, err)
			}
		})
	}
}

func TestNonRegularLockFilesRefusedAtOnce(t *testing.T) {
	for _, kind := range []string{"fifo", "socket"} {
		t.Run(kind, func(t *testing.T) {
			s := newStore(t)
			plant(t, kind, filepath.Join(s.Dir(), "req.lock"))
			wantNotRegular(t, "TryLock", noHang(t, "TryLock", func() error { _, err := s.TryLock("req"); return err }))
			wantNotRegular(t, "IsLocked", noHang(t, "IsLocked", func() error { _, err := s.IsLocked("req"); return err }))
			err := noHang(t, "LockWait", func() error { _, err := s.LockWait(t.Context(), "req", time.Second); return err })
			wantNotRegular(t, "LockWait", err)
			if stderrors.Is(err, ErrLocked) {
				t.Fatal("a FIFO lock file reads as busy")
			}
		})
	}
}

func TestDeviceRecordRefusedAtOnce(t *testing.T) {
	s := newStore(t)
	// A character device node needs privileges to create; a bind of /dev/null is not possible either, so
	// the test plants one only where mknod works (root in the CI container) and skips elsewhere.
	if err := unix.Mknod(filepath.Join(s.Dir(), "dev"), unix.S_IFCHR|0o600, int(unix.Mkdev(1, 3))); err != nil {
		t.Skipf("mknod: %v", err)
	}
	wantNotRegular(t, "Read", noHang(t, "Read", func() error { _, err := s.Read("dev"); return err }))
	wantNotRegular(t, "TryLock", noHang(t, "TryLock", func() error {
		if err := os.Rename(filepath.Join(s.Dir(), "dev"), filepath.Join(s.Dir(), "d.lock")); err != nil {
			return err
		}
		_, err := s.TryLock("d")
		return err
	}))
}
