package safefile

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/errors"
	"golang.org/x/sys/unix"
)

// groupStore is a store syncing through a fresh group, with hook h.
func groupStore(t *testing.T, h func(string)) (*Store, *SyncGroup) {
	t.Helper()
	g := NewSyncGroup()
	if !g.shared {
		t.Skip("this kernel's syncfs does not report writeback errors (before 5.8): the group never shares")
	}
	g.maxOwn = 0 // every caller queues: the first leads a sync (held by the hook), the others wait for the next
	return newStore(t, WithSyncGroup(g), withHook(h)), g
}

// heldFirstSync is a stage hook that holds the first sync of one caller ("own-sync" or "lone-sync") until released, so
// the test can queue others behind a sync in flight.
type heldFirstSync struct {
	*stageCounter
}

func newHeldFirstSync() heldFirstSync { return heldFirstSync{newStageCounter()} }

func (h heldFirstSync) hook(stage string) {
	h.mu.Lock()
	h.counts[stage]++
	n := h.counts[stage]
	h.mu.Unlock()
	h.seen <- stage
	if (stage == "own-sync" || stage == "lone-sync") && n == 1 {
		<-h.gate
	}
}

// tempFiles creates n written, unsynced files in s's directory and returns their descriptors.
func tempFiles(t *testing.T, s *Store, prefix string, n int) []int {
	t.Helper()
	fds := make([]int, n)
	for i := range fds {
		fd, err := unix.Open(filepath.Join(s.Dir(), fmt.Sprintf("%s-%02d", prefix, i)), unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_CLOEXEC, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := unix.Write(fd, []byte("data")); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = unix.Close(fd) })
		fds[i] = fd
	}
	return fds
}

// queueBehindHeldSync starts one sync held in flight, then n callers that must queue behind it; it returns
// the held sync's result and the n callers' results, and releases the held sync once all n queued.
func queueBehindHeldSync(t *testing.T, s *Store, h heldFirstSync, fds []int) (first chan error, rest chan error) {
	t.Helper()
	first, rest = make(chan error, 1), make(chan error, len(fds)-1)
	go func() { first <- s.fsync(fds[0]) }()
	h.waitStages(t, "lone-sync", 1)
	for _, fd := range fds[1:] {
		go func() { rest <- s.fsync(fd) }()
	}
	h.waitStages(t, "sync-queued", len(fds)-1)
	close(h.gate)
	return first, rest
}

// The callers that arrive while a sync runs are served together by the next one: one file-system sync for
// all of them, never the sync that was already running when they arrived.
func TestSyncGroupSharesOneSync(t *testing.T) {
	h := newHeldFirstSync()
	s, g := groupStore(t, h.hook)
	const n = 20
	first, rest := queueBehindHeldSync(t, s, h, tempFiles(t, s, "q", n+1))
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	for range n {
		if err := <-rest; err != nil {
			t.Fatal(err)
		}
	}
	if fsSyncs, own := g.Stats(); fsSyncs != 1 || own != 1 {
		t.Fatalf("%d file-system syncs and %d own fsyncs for 1 + %d queued callers, want 1 and 1", fsSyncs, own, n)
	}
	// Alone again: its own fsync, not the file system's.
	if err := s.fsync(tempFiles(t, s, "alone", 1)[0]); err != nil {
		t.Fatal(err)
	}
	if fsSyncs, own := g.Stats(); fsSyncs != 1 || own != 2 {
		t.Fatalf("a caller alone: %d file-system syncs, %d own fsyncs, want 1 and 2", fsSyncs, own)
	}
}

// A file-system sync that fails fails every caller it served, and every later sync of the group, also a
// caller alone: a write that queued behind the failure can no longer learn of it. Records written after
// it are refused and leave nothing behind.
func TestSyncGroupFailureIsFinal(t *testing.T) {
	h := newHeldFirstSync()
	s, g := groupStore(t, h.hook)
	g.syncfs = func(int) error { return unix.EIO }
	const n = 5
	first, rest := queueBehindHeldSync(t, s, h, tempFiles(t, s, "q", n+1))
	if err := <-first; err != nil {
		t.Fatalf("the held sync (its own fsync) failed: %v", err)
	}
	for range n {
		if err := <-rest; !errors.Is(err, syscall.EIO) {
			t.Fatalf("a caller of the failed sync: %v, want EIO", err)
		}
	}
	g.syncfs = unix.Syncfs // the file system answers again: the group still refuses
	err := s.CreateExclusive("after", []byte("x"))
	if !errors.Is(err, syscall.EIO) {
		t.Fatalf("a record after the failure: %v, want EIO", err)
	}
	if _, err := s.Read("after"); !errors.Is(err, ErrNotExist) {
		t.Fatalf("the refused record: %v, want ErrNotExist", err)
	}
	ents, err := os.ReadDir(s.Dir())
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if len(e.Name()) >= len(tempPrefix) && e.Name()[:len(tempPrefix)] == tempPrefix {
			t.Fatalf("temporary file %s left behind", e.Name())
		}
	}
	// A new group (the store reopened) syncs again.
	s2, err := OpenStore(s.Dir(), WithSyncGroup(NewSyncGroup()))
	if err != nil {
		t.Fatal(err)
	}
	if err := s2.CreateExclusive("reopened", []byte("x")); err != nil {
		t.Fatal(err)
	}
}

// A descriptor on another file system than the group's is fsynced on its own, outside the group.
func TestSyncGroupOtherFileSystem(t *testing.T) {
	var shm unix.Statfs_t
	if err := unix.Statfs("/dev/shm", &shm); err != nil || shm.Type != unix.TMPFS_MAGIC {
		t.Skipf("no tmpfs at /dev/shm (%v)", err)
	}
	s, g := groupStore(t, func(string) {})
	var here unix.Statfs_t
	if err := unix.Statfs(s.Dir(), &here); err != nil {
		t.Fatal(err)
	}
	if here.Type == unix.TMPFS_MAGIC {
		t.Skip("the test's temporary directory is on tmpfs too")
	}
	f, err := os.CreateTemp("/dev/shm", "syncgroup-")
	if err != nil {
		t.Skipf("/dev/shm not writable: %v", err)
	}
	defer os.Remove(f.Name())
	defer f.Close()
	if err := s.fsync(int(f.Fd())); err != nil {
		t.Fatal(err)
	}
	if fsSyncs, own := g.Stats(); fsSyncs != 0 || own != 0 {
		t.Fatalf("a foreign descriptor went through the group: %d, %d", fsSyncs, own)
	}
}

func TestKernelAtLeast(t *testing.T) {
	for _, c := range []struct {
		release string
		want    bool
	}{{"6.18.44-fc-v1300", true}, {"5.8.0", true}, {"5.7.19", false}, {"4.18.0-553.el8_10.x86_64", false},
		{"5.10.0-28-amd64", true}, {"10.0", true}, {"", false}, {"garbage", false}, {"5", false}} {
		if got := kernelAtLeast(c.release, 5, 8); got != c.want {
			t.Errorf("kernelAtLeast(%q, 5, 8) = %v, want %v", c.release, got, c.want)
		}
	}
}

// A few callers at once fsync their own descriptors concurrently, as without a group: while one is held in
// flight, the others of a lone Create's three return without waiting for it.
func TestSyncGroupFewCallersSyncTheirOwn(t *testing.T) {
	h := newHeldFirstSync()
	s, g := groupStore(t, h.hook)
	g.maxOwn = defaultMaxOwnSyncs
	fds := tempFiles(t, s, "own", defaultMaxOwnSyncs)
	held := make(chan error, 1)
	go func() { held <- s.fsync(fds[0]) }()
	h.waitStages(t, "own-sync", 1)
	for _, fd := range fds[1:] { // while the first is held in flight
		if err := s.fsync(fd); err != nil {
			t.Fatal(err)
		}
	}
	close(h.gate)
	if err := <-held; err != nil {
		t.Fatal(err)
	}
	if fsSyncs, own := g.Stats(); fsSyncs != 0 || own != defaultMaxOwnSyncs {
		t.Fatalf("%d file-system syncs, %d own fsyncs, want 0 and %d", fsSyncs, own, defaultMaxOwnSyncs)
	}
}

// A slow file-system sync (another writer's dirty data) stops the sharing: for a while every caller
// fsyncs its own, even when the group is busy.
func TestSyncGroupSlowSyncStopsSharing(t *testing.T) {
	h := newHeldFirstSync()
	s, g := groupStore(t, h.hook)
	g.slowSync = 0 // every syncfs counts as slow
	first, rest := queueBehindHeldSync(t, s, h, tempFiles(t, s, "slow", 3))
	for _, c := range []chan error{first, rest, rest} {
		if err := <-c; err != nil {
			t.Fatal(err)
		}
	}
	g.busyFor, g.maxOwn = time.Hour, 0 // without the pause every caller would queue
	for _, fd := range tempFiles(t, s, "after", 3) {
		if err := s.fsync(fd); err != nil {
			t.Fatal(err)
		}
	}
	if n := h.count("own-sync"); n != 3 {
		t.Fatalf("%d callers fsynced their own after a slow sync, want 3", n)
	}
	if fsSyncs, _ := g.Stats(); fsSyncs != 1 {
		t.Fatalf("%d file-system syncs, want 1 (the slow one)", fsSyncs)
	}
}
