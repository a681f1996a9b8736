package safefile

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/oduflow/oduflow-go/internal/testproc"

	"github.com/cockroachdb/errors"
)

// The crash tests re-execute the test binary as a helper process (TestMain
// switches on helperEnv) which does real file system work and is SIGKILLed or
// SIGSTOPped at chosen points.

const (
	helperEnv      = "RECEIPT_TEST_HELPER"
	helperDirEnv   = "RECEIPT_TEST_DIR"
	helperNameEnv  = "RECEIPT_TEST_NAME"
	helperStageEnv = "RECEIPT_TEST_STAGE"
)

func TestMain(m *testing.M) {
	if mode := os.Getenv(helperEnv); mode != "" {
		os.Exit(runHelper(mode))
	}
	os.Exit(m.Run())
}

// withHook is the test-only StoreOption installing crash points.
func withHook(h func(stage string)) StoreOption {
	return func(c *storeConfig) { c.hook = h }
}

// parkAt returns a hook that announces READY on stdout and then parks
// (until killed) when stage is reached.
func parkAt(stage string) func(string) {
	return func(s string) {
		if s == stage {
			fmt.Println("READY")
			testproc.Park()
		}
	}
}

func runHelper(mode string) int {
	dir, name, stage := os.Getenv(helperDirEnv), os.Getenv(helperNameEnv), os.Getenv(helperStageEnv)
	fail := func(err error) int { fmt.Println("ERR", err); return 1 }
	switch mode {
	case "write":
		s, err := OpenStore(dir, withHook(parkAt(stage)))
		if err != nil {
			return fail(err)
		}
		if err := s.WriteAtomic(name, []byte(strings.Repeat("new content ", 1000))); err != nil {
			return fail(err)
		}
	case "create":
		s, err := OpenStore(dir, withHook(parkAt(stage)))
		if err != nil {
			return fail(err)
		}
		if err := s.CreateExclusive(name, []byte("created")); err != nil {
			return fail(err)
		}
	case "create-after":
		return stagedCreateHelper(dir, name, stage)
	case "lock":
		s, err := OpenStore(dir)
		if err != nil {
			return fail(err)
		}
		if _, err := s.TryLock(name); err != nil {
			return fail(err)
		}
		fmt.Println("READY")
		testproc.Park()
	case "poollock":
		s, err := OpenStore(dir)
		if err != nil {
			return fail(err)
		}
		p, err := s.OpenLockPool()
		if err != nil {
			return fail(err)
		}
		for _, n := range strings.Split(name, ",") {
			if _, err := p.TryLock(n); err != nil {
				return fail(err)
			}
		}
		fmt.Println("READY")
		testproc.Park()
	case "race":
		return raceHelper(dir, name)
	default:
		return fail(errors.Newf("unknown helper mode %q", mode))
	}
	fmt.Println("DONE")
	return 0
}

// raceHelper waits for stdin to close (the start barrier), then runs 25
// concurrent CreateExclusive calls on each of the comma-separated names.
func raceHelper(dir, names string) int {
	s, err := OpenStore(dir)
	if err != nil {
		fmt.Println("ERR", err)
		return 1
	}
	_, _ = io.Copy(io.Discard, os.Stdin)
	var mu sync.Mutex
	wins := map[string]int{}
	var bad error
	var wg sync.WaitGroup
	for _, name := range strings.Split(names, ",") {
		for g := 0; g < 25; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				err := s.CreateExclusive(name, []byte(fmt.Sprintf("%d-%d", os.Getpid(), g)))
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil:
					wins[name]++
					fmt.Printf("WIN %s %d-%d\n", name, os.Getpid(), g)
				case !errors.Is(err, ErrExist):
					bad = err
				}
			}()
		}
	}
	wg.Wait()
	if bad != nil {
		fmt.Println("ERR", bad)
		return 1
	}
	return 0
}

// helper is a copy of the test binary running workerHelper (see TestMain).
type helper = testproc.Child

func startHelper(t *testing.T, mode, dir, name, stage string) *helper {
	t.Helper()
	return testproc.Start(t, helperEnv+"="+mode, helperDirEnv+"="+dir, helperNameEnv+"="+name, helperStageEnv+"="+stage)
}

func TestCrashDuringWriteAtomic(t *testing.T) {
	for _, stage := range []string{"after-temp-write", "before-rename"} {
		t.Run(stage, func(t *testing.T) {
			s := newStore(t)
			if err := s.WriteAtomic("rec", []byte("old content")); err != nil {
				t.Fatal(err)
			}
			h := startHelper(t, "write", s.Dir(), "rec", stage)
			h.Expect(t, "READY")
			if b, err := s.Read("rec"); err != nil || string(b) != "old content" {
				t.Fatalf("while writer parked: %q, %v", b, err)
			}
			h.Kill(t)
			if b, err := s.Read("rec"); err != nil || string(b) != "old content" {
				t.Fatalf("after kill: %q, %v", b, err)
			}
			if names, err := s.List(""); err != nil || len(names) != 1 || names[0] != "rec" {
				t.Fatalf("List after kill = %v, %v", names, err)
			}
			// The stray temporary file is all that is left, and it is
			// never mistaken for the record.
			strays, _ := filepath.Glob(filepath.Join(s.Dir(), tempPrefix+"rec-*"))
			if len(strays) != 1 {
				t.Fatalf("strays = %v", strays)
			}
			if err := s.WriteAtomic("rec", []byte("next")); err != nil {
				t.Fatal(err)
			}
			if b, _ := s.Read("rec"); string(b) != "next" {
				t.Fatalf("after rewrite: %q", b)
			}
		})
	}
	t.Run("completed write", func(t *testing.T) {
		s := newStore(t)
		h := startHelper(t, "write", s.Dir(), "rec", "never")
		h.Expect(t, "DONE")
		if b, err := s.Read("rec"); err != nil || len(b) != 12000 {
			t.Fatalf("Read: %d bytes, %v", len(b), err)
		}
	})
}

func TestCrashDuringCreateExclusive(t *testing.T) {
	s := newStore(t)
	h := startHelper(t, "create", s.Dir(), "rec", "before-link")
	h.Expect(t, "READY")
	h.Kill(t)
	if _, err := s.Read("rec"); !errors.Is(err, ErrNotExist) {
		t.Fatalf("after kill before link: %v", err)
	}
	if err := s.CreateExclusive("rec", []byte("mine")); err != nil {
		t.Fatal(err)
	}
}

func TestLockHolderKilledAndStopped(t *testing.T) {
	s := newStore(t)
	h := startHelper(t, "lock", s.Dir(), "req", "")
	h.Expect(t, "READY")
	if locked, err := s.IsLocked("req"); err != nil || !locked {
		t.Fatalf("IsLocked with live holder: %v, %v", locked, err)
	}
	if _, err := s.TryLock("req"); !errors.Is(err, ErrLocked) {
		t.Fatalf("TryLock against live holder: %v", err)
	}
	// A stopped (merely slow) holder still holds the lock.
	h.Stop(t)
	if locked, err := s.IsLocked("req"); err != nil || !locked {
		t.Fatalf("IsLocked with stopped holder: %v, %v", locked, err)
	}
	// SIGKILL works on a stopped process; the kernel releases its flock.
	h.Kill(t)
	if locked, err := s.IsLocked("req"); err != nil || locked {
		t.Fatalf("IsLocked after holder died: %v, %v", locked, err)
	}
	l, err := s.TryLock("req")
	if err != nil {
		t.Fatalf("TryLock after holder died: %v", err)
	}
	_ = l.Release()
}

func TestConcurrentCreateExclusiveAcrossProcesses(t *testing.T) {
	s := newStore(t)
	names := []string{"race-0", "race-1", "race-2", "race-3", "race-4"}
	var hs []*helper
	for i := 0; i < 8; i++ {
		hs = append(hs, startHelper(t, "race", s.Dir(), strings.Join(names, ","), ""))
	}
	for _, h := range hs { // start barrier: all children are up and waiting
		_ = h.Stdin.Close()
	}
	winners := map[string][]string{}
	for _, h := range hs {
		lines, err := h.Rest(t)
		if err != nil {
			t.Fatalf("helper: %v (%v)", err, lines)
		}
		for _, l := range lines {
			f := strings.Fields(l)
			if len(f) != 3 || f[0] != "WIN" {
				t.Fatalf("helper said %q", l)
			}
			winners[f[1]] = append(winners[f[1]], f[2])
		}
	}
	for _, n := range names { // 8 processes x 25 goroutines = 200 creators per name
		if len(winners[n]) != 1 {
			t.Fatalf("%s: winners %v, want exactly one of 200", n, winners[n])
		}
		if b, err := s.Read(n); err != nil || string(b) != winners[n][0] {
			t.Fatalf("%s: content %q, %v; winner %s", n, b, err, winners[n][0])
		}
	}
	entries, _ := os.ReadDir(s.Dir())
	if len(entries) != len(names) {
		t.Fatalf("left behind: %d entries", len(entries))
	}
}
