package receipt

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/cockroachdb/errors"
	"github.com/oduflow/oduflow-go/internal/safefile"
	"github.com/oduflow/oduflow-go/internal/testproc"
	"golang.org/x/sys/unix"
)

// A Go model of the minion worker (oduflow_job.run) built only from this
// package's state machine on the safe file store, run in real child processes that are
// killed at each crash point. The Python module has the same tests with real
// forks; here they prove that the Go primitives give the minion state machine's guarantees.

const workerDigestless = ""

func workerBinding(req, jid string) Binding {
	return Binding{MinionID: testMinion, RequestID: req, JID: jid, Profile: ProfileConfigure, StateDigest: workerDigestless}
}

// workerHelper runs one worker: args are "request,jid,marker"; crashAt names
// the point where it parks (announcing READY) to be killed or stopped.
func workerHelper(dir, args, crashAt string) int {
	parts := strings.Split(args, ",")
	req, jid, marker := parts[0], parts[1], parts[2]
	park := func(stage string) {
		if stage == crashAt {
			fmt.Println("READY")
			testproc.Park()
		}
	}
	fail := func(err error) int { fmt.Println("ERR", err); return 1 }
	s, err := safefile.OpenStore(dir)
	if err != nil {
		return fail(err)
	}
	_, _ = io.Copy(io.Discard, os.Stdin) // start barrier
	execLock, err := s.TryLock("exec")
	if errors.Is(err, safefile.ErrLocked) {
		fmt.Println("BUSY")
		return 0
	} else if err != nil {
		return fail(err)
	}
	defer execLock.Release()
	reqLock, err := s.TryLock("req-" + req)
	if errors.Is(err, safefile.ErrLocked) {
		fmt.Println("BUSY")
		return 0
	} else if err != nil {
		return fail(err)
	}
	defer reqLock.Release()
	// Any evidence for this request or JID: never execute again.
	for _, n := range []string{"jid-" + jid, "req-" + req} {
		if _, err := s.Read(n); !errors.Is(err, safefile.ErrNotExist) {
			fmt.Println("DUPLICATE")
			return 0
		}
	}
	b := workerBinding(req, jid)
	if err := checkTransition(phaseNone, phaseClaimed, false); err != nil {
		return fail(err)
	}
	if err := s.CreateExclusive("jid-"+jid, []byte(req)); err != nil {
		return fail(err)
	}
	park("after-index")
	if err := checkTransition(phaseClaimed, phaseRunning, false); err != nil {
		return fail(err)
	}
	running := Receipt{Protocol: 1, MinionID: b.MinionID, RequestID: req, JID: jid, Profile: b.Profile, Status: StatusRunning}
	if err := createReceipt(s, "req-"+req, running); err != nil {
		return fail(err)
	}
	park("after-running")
	// The state work: a local side effect each real execution appends to.
	f, err := os.OpenFile(marker, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return fail(err)
	}
	_, _ = fmt.Fprintf(f, "executed by %d\n", os.Getpid())
	_ = f.Sync()
	_ = f.Close()
	park("during-work")
	sum := Reduce(map[string]any{"a": map[string]any{"result": true}, "b": map[string]any{"result": true}})
	if err := checkTransition(phaseRunning, phaseTerminal, false); err != nil {
		return fail(err)
	}
	final := running
	final.Status, final.Passed, final.Total = sum.Status, sum.Passed, sum.Total
	if err := writeReceipt(s, "req-"+req, final); err != nil {
		return fail(err)
	}
	park("after-terminal")
	fmt.Println("DONE")
	return 0
}

// evidence is the local phase of a request: phaseNone, phaseClaimed (JID
// index only), phaseRunning (running record) or phaseTerminal.
func evidence(s *safefile.Store, b Binding) (phase, Receipt, error) {
	r, err := readReceipt(s, "req-"+b.RequestID)
	switch {
	case err == nil:
		if err := b.Check(r); err != nil {
			return "", Receipt{}, err
		}
		if r.Status.Terminal() {
			return phaseTerminal, r, nil
		}
		return phaseRunning, r, nil
	case !errors.Is(err, safefile.ErrNotExist):
		return "", Receipt{}, err // malformed or unsafe: unresolved, an error
	}
	if _, err := s.Read("jid-" + b.JID); err == nil {
		return phaseClaimed, Receipt{}, nil
	} else if !errors.Is(err, safefile.ErrNotExist) {
		return "", Receipt{}, err
	}
	return phaseNone, Receipt{}, nil
}

// minionStatus answers like oduflow_job.status, from evidence only. To avoid
// calling a live worker dead, it reads the records, probes the request lock,
// and reads the records again: partial evidence that was already there before
// a probe that found the lock free is abandoned (a finishing worker commits
// its terminal receipt before releasing the lock).
func minionStatus(s *safefile.Store, b Binding) (Receipt, error) {
	ans := Receipt{Protocol: 1, MinionID: b.MinionID, RequestID: b.RequestID, JID: b.JID, Profile: b.Profile, StateDigest: b.StateDigest}
	for attempt := 0; attempt < 5; attempt++ {
		before, _, err := evidence(s, b)
		if err != nil {
			return Receipt{}, err
		}
		held, err := s.IsLocked("req-" + b.RequestID)
		if err != nil {
			return Receipt{}, err
		}
		after, r, err := evidence(s, b)
		if err != nil {
			return Receipt{}, err
		}
		switch {
		case after == phaseTerminal:
			return r, nil
		case after == phaseNone:
			ans.Status = StatusNotStarted
			return ans, nil
		case held:
			ans.Status = StatusRunning
			return ans, nil
		case before == after:
			ans.Status = StatusUnknown
			return ans, nil
		}
	}
	ans.Status = StatusRunning // evidence keeps moving: a live worker
	return ans, nil
}

func markerCount(t *testing.T, marker string) int {
	t.Helper()
	b, err := os.ReadFile(marker)
	if os.IsNotExist(err) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), "\n")
}

func startWorker(t *testing.T, s *safefile.Store, req, jid, marker, crashAt string) *helper {
	t.Helper()
	h := startHelper(t, "worker", s.Dir(), strings.Join([]string{req, jid, marker}, ","), crashAt)
	return h
}

func statusOf(t *testing.T, s *safefile.Store, b Binding) Status {
	t.Helper()
	r, err := minionStatus(s, b)
	if err != nil {
		t.Fatalf("status: %v", err)
	}
	return r.Status
}

func TestWorkerCrashPoints(t *testing.T) {
	t.Parallel()
	cases := []struct {
		crashAt    string
		afterKill  Status
		executions int
	}{
		{"after-index", StatusUnknown, 0},      // killed between the two claim writes
		{"after-running", StatusUnknown, 0},    // killed before state work
		{"during-work", StatusUnknown, 1},      // killed during state work: its lock died with it
		{"after-terminal", StatusSucceeded, 1}, // killed after the commit (publication lost)
	}
	for _, c := range cases {
		t.Run(c.crashAt, func(t *testing.T) {
			s := newStore(t)
			marker := filepath.Join(t.TempDir(), "marker")
			req, jid := NewRequestID(), "20261129154606051411"
			b := workerBinding(req, jid)
			if got := statusOf(t, s, b); got != StatusNotStarted {
				t.Fatalf("before: %s", got)
			}
			h := startWorker(t, s, req, jid, marker, c.crashAt)
			_ = h.Stdin.Close()
			h.Expect(t, "READY")
			want := StatusRunning
			if c.crashAt == "after-terminal" {
				want = StatusSucceeded
			}
			if got := statusOf(t, s, b); got != want {
				t.Fatalf("while parked: %s, want %s", got, want)
			}
			h.Kill(t)
			r, err := minionStatus(s, b)
			if err != nil || r.Status != c.afterKill {
				t.Fatalf("after kill: %+v, %v; want %s", r, err, c.afterKill)
			}
			if c.afterKill == StatusSucceeded && (r.Passed != 2 || r.Total != 2 || b.Check(r) != nil) {
				t.Fatalf("not the exact receipt: %+v", r)
			}
			// A second delivery of the same publication never executes again.
			h2 := startWorker(t, s, req, jid, marker, "")
			_ = h2.Stdin.Close()
			h2.Expect(t, "DUPLICATE")
			if _, err := h2.Rest(t); err != nil { // wait until it has exited
				t.Fatal(err)
			}
			if n := markerCount(t, marker); n != c.executions {
				t.Fatalf("executions = %d, want %d", n, c.executions)
			}
			if got := statusOf(t, s, b); got != c.afterKill {
				t.Fatalf("after duplicate: %s", got)
			}
		})
	}
}

func TestWorkerStoppedIsRunning(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	marker := filepath.Join(t.TempDir(), "marker")
	req, jid := NewRequestID(), "20261129154606051412"
	b := workerBinding(req, jid)
	h := startWorker(t, s, req, jid, marker, "during-work")
	_ = h.Stdin.Close()
	h.Expect(t, "READY")
	h.Stop(t)
	if got := statusOf(t, s, b); got != StatusRunning {
		t.Fatalf("stopped worker: %s, want running", got)
	}
	h.Kill(t)
	if got := statusOf(t, s, b); got != StatusUnknown {
		t.Fatalf("killed worker: %s, want unknown", got)
	}
}

func TestDuplicateWorkersAndConcurrentPolls(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	marker := filepath.Join(t.TempDir(), "marker")
	req, jid := NewRequestID(), "20261129154606051413"
	b := workerBinding(req, jid)
	var hs []*helper
	for i := 0; i < 6; i++ {
		hs = append(hs, startWorker(t, s, req, jid, marker, ""))
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	seen := map[Status]int{}
	for p := 0; p < 4; p++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				r, err := minionStatus(s, b)
				mu.Lock()
				if err != nil {
					seen["error"]++
					t.Logf("poll error: %+v", err)
				} else {
					seen[r.Status]++
				}
				mu.Unlock()
			}
		}()
	}
	for _, h := range hs {
		_ = h.Stdin.Close()
	}
	outcomes := map[string]int{}
	for _, h := range hs {
		lines, err := h.Rest(t)
		if err != nil || len(lines) != 1 {
			t.Fatalf("worker: %v, %v", lines, err)
		}
		outcomes[lines[0]]++
	}
	close(stop)
	wg.Wait()
	if outcomes["DONE"] != 1 || outcomes["DONE"]+outcomes["BUSY"]+outcomes["DUPLICATE"] != 6 {
		t.Fatalf("outcomes = %v", outcomes)
	}
	if n := markerCount(t, marker); n != 1 {
		t.Fatalf("executions = %d, want 1", n)
	}
	for st, n := range seen {
		if st != StatusNotStarted && st != StatusRunning && st != StatusSucceeded {
			t.Fatalf("a poll answered %s (%d times): %v", st, n, seen)
		}
	}
	if got := statusOf(t, s, b); got != StatusSucceeded {
		t.Fatalf("final: %s", got)
	}
}

func TestWorkerStatusRefusesHostileRecord(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	req, jid := NewRequestID(), "20261129154606051414"
	p := filepath.Join(s.Dir(), "req-"+req)
	if err := os.WriteFile(p, []byte(`{"protocol":1,`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := minionStatus(s, workerBinding(req, jid)); !errors.Is(err, safefile.ErrCorrupt) {
		t.Fatalf("truncated record: %v", err)
	}
	if err := unix.Chmod(p, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := minionStatus(s, workerBinding(req, jid)); !errors.Is(err, safefile.ErrUnsafePath) {
		t.Fatalf("0644 record: %v", err)
	}
}
