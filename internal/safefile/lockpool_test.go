package safefile

import (
	stderrors "errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func newPool(t *testing.T, s *Store) *LockPool {
	t.Helper()
	p, err := s.OpenLockPool()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

func wantLocked(t *testing.T, what string, p *LockPool, name string, want bool) {
	t.Helper()
	if got, err := p.IsLocked(name); err != nil || got != want {
		t.Fatalf("%s: IsLocked(%s) = %v, %v; want %v", what, name, got, err, want)
	}
}

func TestLockPoolExclusiveAcrossGoroutinesAndPools(t *testing.T) {
	s := newStore(t)
	a, b := newPool(t, s), newPool(t, s)
	wantLocked(t, "before", a, "req", false)
	l, err := a.TryLock("req")
	if err != nil || !l.Held() {
		t.Fatalf("TryLock: %v", err)
	}
	for i, p := range []*LockPool{a, b} {
		if _, err := p.TryLock("req"); !stderrors.Is(err, ErrLocked) {
			t.Fatalf("pool %d: TryLock of a held lock: %v", i, err)
		}
		wantLocked(t, fmt.Sprintf("pool %d while held", i), p, "req", true)
	}
	other, err := b.TryLock("other")
	if err != nil {
		t.Fatalf("another name is independent: %v", err)
	}
	if err := l.Release(); err != nil || l.Held() {
		t.Fatalf("Release: %v, Held %v", err, l.Held())
	}
	if err := l.Release(); err != nil {
		t.Fatalf("second Release: %v", err)
	}
	wantLocked(t, "after release", b, "req", false)
	l2, err := b.TryLock("req")
	if err != nil {
		t.Fatalf("TryLock after Release: %v", err)
	}
	// The stale handle's Release must not drop the new holder's range.
	_ = l.Release()
	wantLocked(t, "stale release", a, "req", true)
	_ = l2.Release()
	_ = other.Release()
	// One descriptor for the pool, however many locks are held.
	before := countFDs(t)
	var ls []*Lock
	for i := range 200 {
		l, err := a.TryLock(fmt.Sprintf("n-%d", i))
		if err != nil {
			t.Fatal(err)
		}
		ls = append(ls, l)
	}
	if after := countFDs(t); after > before {
		t.Fatalf("open descriptors %d -> %d while holding 200 pool locks", before, after)
	}
	for _, l := range ls {
		_ = l.Release()
	}
}

func countFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

func TestLockPoolRace(t *testing.T) {
	s := newStore(t)
	pools := []*LockPool{newPool(t, s), newPool(t, s)}
	for round := range 20 {
		name := fmt.Sprintf("race-%d", round)
		var wins atomic.Int64
		var wg sync.WaitGroup
		start := make(chan struct{})
		var won sync.Map
		for g := range 16 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				l, err := pools[g%2].TryLock(name)
				if err == nil {
					wins.Add(1)
					won.Store(l, true)
				} else if !stderrors.Is(err, ErrLocked) {
					t.Error(err)
				}
			}()
		}
		close(start)
		wg.Wait()
		if wins.Load() != 1 {
			t.Fatalf("%s: %d winners of 16", name, wins.Load())
		}
	}
}

func TestLockPoolHolderKilled(t *testing.T) {
	s := newStore(t)
	p := newPool(t, s)
	h := startHelper(t, "poollock", s.Dir(), "req,lease", "")
	h.Expect(t, "READY")
	for _, n := range []string{"req", "lease"} {
		wantLocked(t, "live holder", p, n, true)
		if _, err := p.TryLock(n); !stderrors.Is(err, ErrLocked) {
			t.Fatalf("TryLock %s against a live holder: %v", n, err)
		}
		// The probe took nothing: the holder still has it, a second probe says so.
		wantLocked(t, "after probe", p, n, true)
	}
	h.Stop(t)
	wantLocked(t, "stopped holder", p, "req", true)
	h.Kill(t)
	for _, n := range []string{"req", "lease"} {
		wantLocked(t, "after SIGKILL", p, n, false)
		l, err := p.TryLock(n)
		if err != nil {
			t.Fatalf("TryLock %s after the holder died: %v", n, err)
		}
		_ = l.Release()
	}
}

func TestLockPoolHostileFiles(t *testing.T) {
	for _, kind := range []string{"fifo", "socket"} {
		t.Run(kind, func(t *testing.T) {
			s := newStore(t)
			p := newPool(t, s)
			plant(t, kind, filepath.Join(s.Dir(), "req.lock"))
			wantNotRegular(t, "TryLock", noHang(t, "TryLock", func() error { _, err := p.TryLock("req"); return err }))
			wantNotRegular(t, "IsLocked", noHang(t, "IsLocked", func() error { _, err := p.IsLocked("req"); return err }))
			err := noHang(t, "LockWait", func() error { _, err := p.LockWait(t.Context(), "req", time.Second); return err })
			wantNotRegular(t, "LockWait", err)
			if stderrors.Is(err, ErrLocked) {
				t.Fatal("a FIFO lock file reads as busy")
			}
		})
	}
	t.Run("symlink", func(t *testing.T) {
		s := newStore(t)
		p := newPool(t, s)
		target := filepath.Join(t.TempDir(), "elsewhere")
		if err := os.WriteFile(target, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, filepath.Join(s.Dir(), "req.lock")); err != nil {
			t.Fatal(err)
		}
		if _, err := p.TryLock("req"); !stderrors.Is(err, ErrUnsafePath) {
			t.Fatalf("TryLock through a symlink: %v", err)
		}
	})
	t.Run("foreign mode", func(t *testing.T) {
		s := newStore(t)
		p := newPool(t, s)
		if err := os.WriteFile(filepath.Join(s.Dir(), "req.lock"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(filepath.Join(s.Dir(), "req.lock"), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := p.TryLock("req"); !stderrors.Is(err, ErrUnsafePath) {
			t.Fatalf("TryLock of a 0644 lock file: %v", err)
		}
	})
	t.Run("pool file planted", func(t *testing.T) {
		s := newStore(t)
		plant(t, "fifo", filepath.Join(s.Dir(), poolFileName))
		err := noHang(t, "OpenLockPool", func() error { _, err := s.OpenLockPool(); return err })
		wantNotRegular(t, "OpenLockPool", err)
	})
	t.Run("lock file replaced", func(t *testing.T) {
		s := newStore(t)
		p := newPool(t, s)
		l, err := p.TryLock("req")
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(s.Dir(), "req.lock")
		if err := os.Rename(path, path+".old"); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		if l.Held() {
			t.Fatal("Held() true after the lock file was replaced (another process could take the name)")
		}
	})
	t.Run("pool file replaced", func(t *testing.T) {
		s := newStore(t)
		p := newPool(t, s)
		l, err := p.TryLock("req")
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(s.Dir(), poolFileName)
		if err := os.Remove(path); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		if l.Held() {
			t.Fatal("Held() true after the pool file was replaced")
		}
		if _, err := p.TryLock("other"); !stderrors.Is(err, ErrUnsafePath) || !stderrors.Is(err, ErrLockPoolReplaced) {
			t.Fatalf("TryLock through a replaced pool file: %v", err)
		}
		// Every lock operation checks the pool's identity: a held name is not reported held through a
		// pool that no longer excludes anybody (before: true, from the pool's own table).
		if held, err := p.IsLocked("req"); !stderrors.Is(err, ErrLockPoolReplaced) {
			t.Fatalf("IsLocked of a name held through a replaced pool: %v %v", held, err)
		}
		if _, err := p.LockWait(t.Context(), "other", 0); !stderrors.Is(err, ErrLockPoolReplaced) {
			t.Fatalf("LockWait through a replaced pool file: %v", err)
		}
		// A new pool on the new file works, and excludes others again.
		q := newPool(t, s)
		if _, err := q.TryLock("req"); err != nil {
			t.Fatalf("TryLock through a reopened pool: %v", err)
		}
		wantLocked(t, "reopened pool", newPool(t, s), "req", true)
	})
}

func TestLockPoolClose(t *testing.T) {
	s := newStore(t)
	p, err := s.OpenLockPool()
	if err != nil {
		t.Fatal(err)
	}
	l, err := p.TryLock("req")
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil || l.Held() {
		t.Fatalf("Close: %v, Held %v", err, l.Held())
	}
	q := newPool(t, s)
	wantLocked(t, "after Close", q, "req", false)
	if names, err := s.List(""); err != nil || len(names) != 0 {
		t.Fatalf("List shows lock files: %v, %v", names, err)
	}
	var st unix.Stat_t
	if err := unix.Lstat(filepath.Join(s.Dir(), poolFileName), &st); err != nil || st.Mode&0o777 != 0o600 {
		t.Fatalf("pool file mode %o, %v", st.Mode&0o777, err)
	}
}

// TestLockPoolKernelCallOutsideMutex: while one goroutine's lock call is in the kernel (held there by
// the test hook), the pool's reads go on: Held and IsLocked of a held lock (a lease check, a Status), and
// a TryLock of the name being taken answers ErrLocked. With the pool's mutex held through the kernel call
// (it walks the pool file's list of ranges, thousands long with as many requests in flight) they would
// all wait for it.
func TestLockPoolKernelCallOutsideMutex(t *testing.T) {
	s := newStore(t)
	p := newPool(t, s)
	other, err := p.TryLock("other")
	if err != nil {
		t.Fatal(err)
	}
	inKernel, proceed := make(chan struct{}), make(chan struct{})
	var first atomic.Bool
	p.kernelHook = func(cmd int, typ int16) {
		if typ == unix.F_WRLCK && cmd == unix.F_OFD_SETLK && first.CompareAndSwap(false, true) {
			close(inKernel)
			<-proceed
		}
	}
	slow := make(chan error, 1)
	go func() {
		l, err := p.TryLock("slow")
		if err == nil && !l.Held() {
			err = fmt.Errorf("slow lock not held")
		}
		slow <- err
	}()
	<-inKernel
	done := make(chan error, 1)
	go func() {
		if !other.Held() {
			done <- fmt.Errorf("other not held")
			return
		}
		if locked, err := p.IsLocked("other"); err != nil || !locked {
			done <- fmt.Errorf("IsLocked(other) = %v, %v", locked, err)
			return
		}
		if _, err := p.TryLock("slow"); !stderrors.Is(err, ErrLocked) {
			done <- fmt.Errorf("TryLock of a name being taken: %v, want ErrLocked", err)
			return
		}
		done <- p.Check()
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		close(proceed)
		t.Fatal("the pool's other operations waited for a lock call in the kernel")
	}
	close(proceed)
	if err := <-slow; err != nil {
		t.Fatal(err)
	}
}

// TestLockPoolReleaseKeepsNameUntilUnlocked: while a release's unlock is in the kernel, the name is not
// free through the pool (a TryLock then would take a range the unlock removes next, and another process
// could take the lock too); once the release returned it can be taken again, and then another pool (as
// another process would) finds it locked.
func TestLockPoolReleaseKeepsNameUntilUnlocked(t *testing.T) {
	s := newStore(t)
	p, q := newPool(t, s), newPool(t, s)
	l, err := p.TryLock("req")
	if err != nil {
		t.Fatal(err)
	}
	inKernel, proceed := make(chan struct{}), make(chan struct{})
	var first atomic.Bool
	p.kernelHook = func(cmd int, typ int16) {
		if typ == unix.F_UNLCK && first.CompareAndSwap(false, true) {
			close(inKernel)
			<-proceed
		}
	}
	released := make(chan error, 1)
	go func() { released <- l.Release() }()
	<-inKernel
	checked := make(chan error, 1)
	go func() {
		if l.Held() {
			checked <- fmt.Errorf("a lock being released reads held")
			return
		}
		if _, err := p.TryLock("req"); !stderrors.Is(err, ErrLocked) {
			checked <- fmt.Errorf("TryLock while the unlock is in the kernel: %v, want ErrLocked", err)
			return
		}
		checked <- nil
	}()
	select {
	case err := <-checked:
		if err != nil {
			close(proceed)
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		close(proceed)
		t.Fatal("Held and TryLock waited for an unlock call in the kernel")
	}
	close(proceed)
	if err := <-released; err != nil {
		t.Fatal(err)
	}
	l2, err := p.TryLock("req")
	if err != nil || !l2.Held() {
		t.Fatalf("TryLock after the release: %v", err)
	}
	if _, err := q.TryLock("req"); !stderrors.Is(err, ErrLocked) {
		t.Fatalf("another pool took a held lock: %v", err)
	}
}
