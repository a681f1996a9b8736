package oduflow

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/oduflow/oduflow-go/internal/safefile"
)

// openWorkerLogNoHang fails the test if openWorkerLog has not returned within two seconds.
func openWorkerLogNoHang(t *testing.T, path string) error {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		f, err := openWorkerLog(path)
		if f != nil {
			_ = f.Close()
		}
		done <- err
	}()
	select {
	case err := <-done:
		return err
	case <-time.After(10 * time.Second):
		t.Fatalf("opening the worker log %s hangs", path)
		return nil
	}
}

func privateDir(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "logs")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestWorkerLogRefusesNonRegularAtOnce(t *testing.T) {
	t.Run("fifo", func(t *testing.T) {
		p := filepath.Join(privateDir(t), workerLogName)
		if err := unix.Mkfifo(p, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := openWorkerLogNoHang(t, p); !errors.Is(err, safefile.ErrNotRegular) || !errors.Is(err, safefile.ErrUnsafePath) {
			t.Fatalf("fifo: %v", err)
		}
	})
	t.Run("fifo with a reader", func(t *testing.T) {
		p := filepath.Join(privateDir(t), workerLogName)
		if err := unix.Mkfifo(p, 0o600); err != nil {
			t.Fatal(err)
		}
		r, err := unix.Open(p, unix.O_RDONLY|unix.O_NONBLOCK, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer unix.Close(r)
		if err := openWorkerLogNoHang(t, p); !errors.Is(err, safefile.ErrNotRegular) {
			t.Fatalf("fifo with reader: %v", err)
		}
	})
	t.Run("socket", func(t *testing.T) {
		p := filepath.Join(privateDir(t), workerLogName)
		l, err := net.Listen("unix", p)
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		if err := openWorkerLogNoHang(t, p); !errors.Is(err, safefile.ErrNotRegular) {
			t.Fatalf("socket: %v", err)
		}
	})
	t.Run("directory", func(t *testing.T) {
		p := filepath.Join(privateDir(t), workerLogName)
		if err := os.Mkdir(p, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := openWorkerLogNoHang(t, p); !errors.Is(err, safefile.ErrNotRegular) {
			t.Fatalf("directory: %v", err)
		}
	})
	t.Run("regular file is blocking for the worker", func(t *testing.T) {
		p := filepath.Join(privateDir(t), workerLogName)
		f, err := openWorkerLog(p)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		// Through the raw descriptor: File.Fd would itself switch the descriptor to blocking mode.
		rc, err := f.SyscallConn()
		if err != nil {
			t.Fatal(err)
		}
		var flags int
		if cerr := rc.Control(func(fd uintptr) { flags, err = unix.FcntlInt(fd, unix.F_GETFL, 0) }); cerr != nil {
			t.Fatal(cerr)
		}
		if err != nil || flags&unix.O_NONBLOCK != 0 || flags&unix.O_APPEND == 0 {
			t.Fatalf("flags %#x %v", flags, err)
		}
	})
}
