package safefile

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/errors"
)

func newStore(t *testing.T, opts ...StoreOption) *Store {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "receipts")
	s, err := OpenStore(dir, append([]StoreOption{WithCreate()}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func mustMode(t *testing.T, path string, want os.FileMode) {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != want {
		t.Fatalf("%s: mode %v, want %v", path, fi.Mode().Perm(), want)
	}
}

func TestStoreBasics(t *testing.T) {
	old := umask(0o022)
	defer umask(old)
	dir := filepath.Join(t.TempDir(), "a", "b", "receipts")
	if _, err := OpenStore(dir); !errors.Is(err, ErrNotExist) {
		t.Fatalf("missing dir without WithCreate: %v", err)
	}
	s, err := OpenStore(dir, WithCreate())
	if err != nil {
		t.Fatal(err)
	}
	if s.Dir() != dir {
		t.Fatalf("Dir() = %q", s.Dir())
	}
	mustMode(t, dir, 0o700)
	mustMode(t, filepath.Dir(dir), 0o755)
	if _, err := OpenStore(dir, WithCreate()); err != nil {
		t.Fatalf("reopen: %v", err)
	}
	if _, err := s.Read("r1"); !errors.Is(err, ErrNotExist) {
		t.Fatalf("Read missing: %v", err)
	}
	if err := s.WriteAtomic("r1", []byte("one")); err != nil {
		t.Fatal(err)
	}
	mustMode(t, filepath.Join(dir, "r1"), 0o600)
	if err := s.WriteAtomic("r1", []byte("two")); err != nil {
		t.Fatal(err)
	}
	if b, err := s.Read("r1"); err != nil || string(b) != "two" {
		t.Fatalf("Read = %q, %v", b, err)
	}
	if err := s.CreateExclusive("r1", []byte("three")); !errors.Is(err, ErrExist) {
		t.Fatalf("CreateExclusive existing: %v", err)
	}
	if err := s.CreateExclusive("r2", nil); err != nil {
		t.Fatal(err)
	}
	if b, err := s.Read("r2"); err != nil || len(b) != 0 {
		t.Fatalf("empty record: %q, %v", b, err)
	}
	if _, err := s.TryLock("r1"); err != nil {
		t.Fatal(err)
	}
	names, err := s.List("")
	if err != nil || len(names) != 2 || names[0] != "r1" || names[1] != "r2" {
		t.Fatalf("List = %v, %v", names, err)
	}
	if names, _ := s.List("r2"); len(names) != 1 {
		t.Fatalf("List(r2) = %v", names)
	}
	if err := s.Remove("r1"); err != nil {
		t.Fatal(err)
	}
	if err := s.Remove("r1"); !errors.Is(err, ErrNotExist) {
		t.Fatalf("Remove twice: %v", err)
	}
	if _, err := s.List("a/b"); !errors.Is(err, ErrInvalidName) {
		t.Fatalf("List bad prefix: %v", err)
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if e.Name()[0] == '.' {
			t.Fatalf("temporary file left: %s", e.Name())
		}
	}
}

func TestStoreNames(t *testing.T) {
	s := newStore(t)
	for _, n := range []string{"", ".", "..", ".hidden", "a/b", "a\x00b", "x.lock", "a b", "é", string(make([]byte, 201))} {
		if err := s.WriteAtomic(n, nil); !errors.Is(err, ErrInvalidName) {
			t.Errorf("WriteAtomic(%q): %v", n, err)
		}
		if _, err := s.Read(n); !errors.Is(err, ErrInvalidName) {
			t.Errorf("Read(%q): %v", n, err)
		}
		if _, err := s.TryLock(n); !errors.Is(err, ErrInvalidName) {
			t.Errorf("TryLock(%q): %v", n, err)
		}
	}
	for _, n := range []string{"a", "req-0f8fad5b-d9cb-469f-a165-70867728950e.json", "jid_20261129154606051411", "A.B-c_d"} {
		if err := s.WriteAtomic(n, []byte("x")); err != nil {
			t.Errorf("WriteAtomic(%q): %v", n, err)
		}
	}
}

func TestStoreMaxRecordSize(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "s")
	s, err := OpenStore(dir, WithCreate(), WithMaxRecordSize(4))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.WriteAtomic("big", []byte("12345")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Read("big"); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Read big: %v", err)
	}
}

func TestLocks(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	if locked, err := s.IsLocked("req"); err != nil || locked {
		t.Fatalf("IsLocked before: %v, %v", locked, err)
	}
	l, err := s.TryLock("req")
	if err != nil {
		t.Fatal(err)
	}
	mustMode(t, filepath.Join(s.Dir(), "req.lock"), 0o600)
	if l.Name() != "req" {
		t.Fatalf("Name() = %q", l.Name())
	}
	if locked, err := s.IsLocked("req"); err != nil || !locked {
		t.Fatalf("IsLocked held: %v, %v", locked, err)
	}
	if _, err := s.TryLock("req"); !errors.Is(err, ErrLocked) {
		t.Fatalf("second TryLock: %v", err)
	}
	start := time.Now()
	if _, err := s.LockWait(ctx, "req", 60*time.Millisecond); !errors.Is(err, ErrLocked) {
		t.Fatalf("LockWait timeout: %v", err)
	}
	if d := time.Since(start); d < 50*time.Millisecond || d > 2*time.Second {
		t.Fatalf("LockWait waited %v", d)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := s.LockWait(cctx, "req", time.Minute); !errors.Is(err, context.Canceled) {
		t.Fatalf("LockWait cancelled: %v", err)
	}
	// The holder lets go once the waiter has found the lock held (its first try), so the waiter must wait
	// and then take it: the try function LockWait polls, with the release as the event between two tries.
	tries := 0
	l2, err := lockWait(ctx, "req", 5*time.Second, func(n string) (*Lock, error) {
		got, err := s.TryLock(n)
		if tries++; tries == 1 {
			if !errors.Is(err, ErrLocked) {
				t.Fatalf("first try of LockWait against a held lock: %v", err)
			}
			_ = l.Release()
		}
		return got, err
	})
	if err == nil && tries < 2 {
		t.Fatalf("LockWait took a held lock in %d tries", tries)
	}
	if err != nil {
		t.Fatalf("LockWait after release: %v", err)
	}
	if err := l2.Release(); err != nil {
		t.Fatal(err)
	}
	if err := l2.Release(); err != nil {
		t.Fatalf("second Release: %v", err)
	}
	if locked, _ := s.IsLocked("req"); locked {
		t.Fatal("still locked after release")
	}
	l3, err := s.LockWait(ctx, "req", 0)
	if err != nil {
		t.Fatal(err)
	}
	_ = l3.Release()
	// Locks are independent of records of the same name.
	if err := s.WriteAtomic("req", []byte("x")); err != nil {
		t.Fatal(err)
	}
}

// Readers racing with replacements never see an error or a partial record:
// the rename race (a lookup that finds the old inode just as its link count
// drops to 0) is retried, not reported as unsafe.
func TestReadWhileReplacing(t *testing.T) {
	s := newStore(t)
	a, b := []byte(strings.Repeat("a", 3000)), []byte(strings.Repeat("b", 5000))
	if err := s.WriteAtomic("rec", a); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	errs := make(chan error, 4)
	var wg sync.WaitGroup
	for r := 0; r < 3; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				got, err := s.Read("rec")
				if err == nil && string(got) != string(a) && string(got) != string(b) {
					err = errors.Newf("partial record of %d bytes", len(got))
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	for i := 0; i < 60; i++ {
		data := a
		if i%2 == 0 {
			data = b
		}
		if err := s.WriteAtomic("rec", data); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("reader: %v", err)
	}
}
