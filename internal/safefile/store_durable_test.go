package safefile

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/errors"
)

// stageCounter counts hook stages; the first "dir-fsync" waits for gate (so a round stays in flight).
type stageCounter struct {
	mu     sync.Mutex
	counts map[string]int
	gate   chan struct{}
	seen   chan string
}

func newStageCounter() *stageCounter {
	return &stageCounter{counts: map[string]int{}, gate: make(chan struct{}), seen: make(chan string, 1024)}
}

func (c *stageCounter) hook(stage string) {
	c.mu.Lock()
	c.counts[stage]++
	n := c.counts[stage]
	c.mu.Unlock()
	c.seen <- stage
	if stage == "dir-fsync" && n == 1 {
		<-c.gate
	}
}

func (c *stageCounter) count(stage string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.counts[stage]
}

// waitStages waits until stage has been seen n times.
func (c *stageCounter) waitStages(t *testing.T, stage string, n int) {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for c.count(stage) < n {
		select {
		case <-c.seen:
		case <-deadline:
			t.Fatalf("%s seen %d times, want %d", stage, c.count(stage), n)
		}
	}
}

// A directory fsync that is already running never answers a caller that arrived after it started; the
// callers that arrive meanwhile all share the next one.
func TestSyncDirGroupCommit(t *testing.T) {
	c := newStageCounter()
	s := newStore(t, withHook(c.hook))
	first := make(chan error, 1)
	go func() { first <- s.SyncDir() }()
	c.waitStages(t, "dir-fsync", 1) // round 1 is in flight, held at the hook
	const n = 20
	type result struct {
		err    error
		rounds int // fsync rounds started when the call returned
	}
	results := make(chan result, n)
	for i := range n {
		go func() {
			err := s.CreateExclusive(fmt.Sprintf("rec-%02d", i), []byte("x"))
			results <- result{err, c.count("dir-fsync")}
		}()
	}
	c.waitStages(t, "dir-sync-queued", n) // every caller is waiting for a round
	select {
	case r := <-results:
		t.Fatalf("a call returned while the only round it could have joined was in flight: %+v", r)
	case <-time.After(20 * time.Millisecond):
	}
	close(c.gate)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	for range n {
		r := <-results
		if r.err != nil {
			t.Fatal(r.err)
		}
		if r.rounds < 2 {
			t.Fatalf("a call returned after %d rounds: its rename was never covered", r.rounds)
		}
	}
	if got := c.count("dir-fsync"); got != 2 {
		t.Fatalf("%d directory fsyncs for 1 + %d concurrent callers, want 2 (group commit)", got, n)
	}
	if names, err := s.List("rec-"); err != nil || len(names) != n {
		t.Fatalf("List = %v, %v", names, err)
	}
}

func TestCreateExclusiveAfter(t *testing.T) {
	t.Run("prior runs before the record appears", func(t *testing.T) {
		s := newStore(t)
		calls := 0
		syncs := 0
		err := s.CreateExclusiveAfter("rec", []byte("data"), func() (func() error, error) {
			calls++
			return func() error {
				syncs++
				if _, err := s.Read("rec"); !errors.Is(err, ErrNotExist) {
					t.Errorf("record visible before prior finished: %v", err)
				}
				if strays, _ := filepath.Glob(filepath.Join(s.Dir(), tempPrefix+"rec-*")); len(strays) != 1 {
					t.Errorf("temporary file not written before prior's sync: %v", strays)
				}
				return nil
			}, nil
		})
		if err != nil || calls != 1 || syncs != 1 {
			t.Fatalf("err %v, prior calls %d, syncs %d", err, calls, syncs)
		}
		if b, err := s.Read("rec"); err != nil || string(b) != "data" {
			t.Fatalf("Read: %q, %v", b, err)
		}
	})
	t.Run("failed prior: no record, no temporary file", func(t *testing.T) {
		s := newStore(t)
		boom := errors.New("boom")
		failures := map[string]Prior{
			"names": func() (func() error, error) { return nil, boom },
			"sync":  func() (func() error, error) { return func() error { return boom }, nil },
		}
		for what, prior := range failures {
			if err := s.CreateExclusiveAfter("rec", []byte("data"), prior); !errors.Is(err, boom) {
				t.Fatalf("%s: err = %v, want the prior's", what, err)
			}
			if _, err := s.Read("rec"); !errors.Is(err, ErrNotExist) {
				t.Fatalf("%s: record after a failed prior: %v", what, err)
			}
			if entries, _ := os.ReadDir(s.Dir()); len(entries) != 0 {
				t.Fatalf("%s: left behind: %v", what, entries)
			}
		}
		if err := s.CreateExclusiveAfter("rec", []byte("again"), nil); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("prior runs once on every path", func(t *testing.T) {
		s := newStore(t)
		if err := s.WriteAtomic("taken", []byte("old")); err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"taken", "../bad", ".hidden"} {
			calls, syncs := 0, 0
			err := s.CreateExclusiveAfter(name, []byte("new"), func() (func() error, error) {
				calls++
				return func() error { syncs++; return nil }, nil
			})
			if err == nil || calls != 1 || syncs != 1 {
				t.Fatalf("%s: err %v, prior calls %d, syncs %d", name, err, calls, syncs)
			}
		}
		if b, _ := s.Read("taken"); string(b) != "old" {
			t.Fatalf("taken overwritten: %q", b)
		}
		if strays, _ := filepath.Glob(filepath.Join(s.Dir(), tempPrefix+"*")); len(strays) != 0 {
			t.Fatalf("strays: %v", strays)
		}
	})
}

func TestCreateEmptyAndSub(t *testing.T) {
	s := newStore(t)
	sub, created, err := s.Sub("client", true)
	if err != nil || !created {
		t.Fatalf("Sub: created %v, %v", created, err)
	}
	mustMode(t, sub.Dir(), 0o700)
	if _, created, err := s.Sub("client", true); err != nil || created {
		t.Fatalf("Sub again: created %v, %v", created, err)
	}
	if _, _, err := s.Sub("missing", false); !errors.Is(err, ErrNotExist) {
		t.Fatalf("Sub of a missing directory: %v", err)
	}
	if _, _, err := s.Sub("a/b", true); !errors.Is(err, ErrInvalidName) {
		t.Fatalf("Sub(a/b): %v", err)
	}
	if err := os.Symlink(sub.Dir(), filepath.Join(s.Dir(), "link")); err != nil {
		t.Fatal(err)
	}
	_, _, err = s.Sub("link", true)
	wantUnsafe(t, err, "symlink")

	old := umask(0o277) // the create mode loses the owner's write bit; CreateEmpty sets 0600 exactly
	sync, err := sub.CreateEmpty("entry")
	umask(old)
	if err != nil {
		t.Fatal(err)
	}
	if err := sync(); err != nil {
		t.Fatal(err)
	}
	mustMode(t, filepath.Join(sub.Dir(), "entry"), 0o600)
	if b, err := sub.Read("entry"); err != nil || len(b) != 0 {
		t.Fatalf("Read: %q, %v", b, err)
	}
	if _, err := sub.CreateEmpty("entry"); !errors.Is(err, ErrExist) {
		t.Fatalf("second CreateEmpty: %v", err)
	}
	outside := filepath.Join(t.TempDir(), "victim")
	if err := os.Symlink(outside, filepath.Join(sub.Dir(), "trap")); err != nil {
		t.Fatal(err)
	}
	if _, err := sub.CreateEmpty("trap"); !errors.Is(err, ErrExist) {
		t.Fatalf("CreateEmpty over a symlink: %v", err)
	}
	if _, err := os.Lstat(outside); !os.IsNotExist(err) {
		t.Fatal("created through a symlink")
	}
	if _, err := sub.CreateEmpty("x.lock"); !errors.Is(err, ErrInvalidName) {
		t.Fatalf("CreateEmpty of a lock name: %v", err)
	}
	if err := sub.SyncDir(); err != nil {
		t.Fatal(err)
	}
}
