package oduflowtest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/oduflow/oduflow-go/oduflow/claims"
)

// ChildEnv is the environment variable that turns a re-executed test binary into one of the suite's child
// processes. It carries a JSON job; its presence is all a store's tests need to look at (IsChild).
const ChildEnv = "ODUFLOWTEST_CHILD"

// Lines a child prints on stdout for its parent; anything else on stdout is the testing package's.
const (
	lineReady  = "oduflowtest: ready"
	lineHeld   = "oduflowtest: held"
	lineResult = "oduflowtest: result "
)

// Child process roles.
const (
	roleCreate = "create" // race Create of one claim from many goroutines
	roleCAS    = "cas"    // race fenced increments of one claim
	roleHold   = "hold"   // hold a request lock and a client lease until killed
	// roleServerLock holds a catalog's server lock until killed (TestCatalogStore).
	roleServerLock = "server-lock"
)

// childProcs is how many OS processes race; each runs raceGoroutines goroutines.
const childProcs = 4

// IsChild reports whether this test binary runs as one of the suite's child processes. A store's Test
// function may use it to skip setup only the parent needs (starting a server the location points at).
func IsChild() bool { return os.Getenv(ChildEnv) != "" }

type childJob struct {
	Test       string `json:"test"` // the Test function (t.Name()) that called TestClaimStore
	Role       string `json:"role"`
	Location   string `json:"location"`
	Claim      []byte `json:"claim"` // encoded claim (create, cas, hold)
	Barrier    string `json:"barrier,omitempty"`
	Goroutines int    `json:"goroutines"`
	Rounds     int    `json:"rounds,omitempty"`
	Minion     string `json:"minion,omitempty"` // server-lock, fence
	Shared     string `json:"shared,omitempty"` // fence: the file holding the last token recorded
}

func childJobFromEnv() (childJob, bool) {
	v := os.Getenv(ChildEnv)
	if v == "" {
		return childJob{}, false
	}
	var j childJob
	if err := json.Unmarshal([]byte(v), &j); err != nil {
		return childJob{Role: "invalid"}, true
	}
	return j, true
}

// runChild plays a child's role; failures fail the child's test, which the parent sees as its exit code.
func runChild(t *testing.T, f StoreFactory, job childJob) {
	ctx := testContext(t)
	c, err := unmarshalClaim(job.Claim)
	if err != nil {
		t.Fatalf("oduflowtest child: job %q: %v", job.Role, err)
	}
	st, err := f.Open(ctx, job.Location)
	if err != nil {
		t.Fatalf("oduflowtest child: open %q: %v", job.Location, err)
	}
	if cl, ok := st.(io.Closer); ok {
		defer func() { _ = cl.Close() }()
	}
	switch job.Role {
	case roleHold:
		if _, err := st.TryRequestLock(ctx, c.RequestID); err != nil {
			t.Fatalf("oduflowtest child: request lock: %v", err)
		}
		if _, err := st.AcquireClientLease(ctx, c.MinionID, 10*time.Second); err != nil {
			t.Fatalf("oduflowtest child: client lease: %v", err)
		}
		fmt.Println(lineHeld)
		<-ctx.Done() // the parent kills us long before
		t.Fatal("oduflowtest child: holder was not killed")
	case roleFence:
		fmt.Println(lineReady)
		if err := waitBarrier(ctx, job.Barrier); err != nil {
			t.Fatal(err)
		}
		var ok, other atomic.Int64
		var wg sync.WaitGroup
		for range job.Goroutines {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := recordIntents(ctx, st, job.Minion, job.Shared, job.Rounds); err != nil {
					other.Add(1)
					t.Errorf("oduflowtest child: %v", err)
					return
				}
				ok.Add(int64(job.Rounds))
			}()
		}
		wg.Wait()
		fmt.Printf("%sok=%d exists=0 other=%d\n", lineResult, ok.Load(), other.Load())
	case roleCreate, roleCAS:
		fmt.Println(lineReady)
		if err := waitBarrier(ctx, job.Barrier); err != nil {
			t.Fatal(err)
		}
		var ok, exists, other atomic.Int64
		var wg sync.WaitGroup
		for range job.Goroutines {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if job.Role == roleCAS {
					n, err := incrementTotal(ctx, st, c.RequestID, job.Rounds)
					ok.Add(int64(n))
					if err != nil {
						other.Add(1)
						t.Errorf("oduflowtest child: %v", err)
					}
					return
				}
				switch err := st.Create(ctx, clone(c)); {
				case err == nil:
					ok.Add(1)
				case errors.Is(err, claims.ErrClaimExists):
					exists.Add(1)
				default:
					other.Add(1)
					t.Errorf("oduflowtest child: Create: %v", err)
				}
			}()
		}
		wg.Wait()
		fmt.Printf("%sok=%d exists=%d other=%d\n", lineResult, ok.Load(), exists.Load(), other.Load())
	default:
		t.Fatalf("oduflowtest child: unknown role %q", job.Role)
	}
}

func waitBarrier(ctx context.Context, path string) error {
	for {
		if _, err := os.Stat(path); err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return errors.New("oduflowtest child: barrier never opened")
		case <-time.After(time.Millisecond):
		}
	}
}

// child is a running child process of the suite.
type child struct {
	cmd    *exec.Cmd
	lines  chan string
	stderr *bytes.Buffer
	waited bool
}

// runPattern is the -test.run pattern selecting exactly the named (sub)test.
func runPattern(name string) string {
	parts := strings.Split(name, "/")
	for i, p := range parts {
		parts[i] = "^" + regexp.QuoteMeta(p) + "$"
	}
	return strings.Join(parts, "/")
}

// spawn re-executes the test binary as a child running job.
func (s *suite) spawn(t testing.TB, job childJob) *child {
	t.Helper()
	job.Test = s.root
	env, err := json.Marshal(job)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run="+runPattern(s.root), "-test.count=1", "-test.timeout=5m")
	cmd.Env = append(os.Environ(), ChildEnv+"="+string(env))
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	c := &child{cmd: cmd, lines: make(chan string, 64), stderr: &bytes.Buffer{}}
	cmd.Stderr = c.stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("re-execute the test binary: %v", err)
	}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			c.lines <- sc.Text()
		}
		close(c.lines)
	}()
	t.Cleanup(func() {
		if !c.waited {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	return c
}

// expect waits for a line of the child starting with prefix and returns it.
func (c *child) expect(t testing.TB, prefix string) string {
	t.Helper()
	timeout := time.After(time.Minute)
	for {
		select {
		case l, ok := <-c.lines:
			if !ok {
				c.fail(t, "exited before printing "+prefix)
			}
			if strings.HasPrefix(l, prefix) {
				return l
			}
		case <-timeout:
			c.fail(t, "did not print "+prefix+" within a minute")
		}
	}
}

// result waits for the child's result line and its successful exit.
func (c *child) result(t testing.TB) (ok, exists int) {
	t.Helper()
	l := c.expect(t, lineResult)
	var other int
	if _, err := fmt.Sscanf(strings.TrimPrefix(l, lineResult), "ok=%d exists=%d other=%d", &ok, &exists, &other); err != nil || other != 0 {
		c.fail(t, "reported "+l)
	}
	for range c.lines { // drain until exit
	}
	c.waited = true
	if err := c.cmd.Wait(); err != nil {
		c.fail(t, "exit: "+err.Error())
	}
	return ok, exists
}

// kill ends the child with SIGKILL and reaps it.
func (c *child) kill(t testing.TB) {
	t.Helper()
	if err := c.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	c.waited = true
	_ = c.cmd.Wait()
}

func (c *child) fail(t testing.TB, what string) {
	t.Helper()
	if !c.waited { // stderr is complete (and no longer written) only once the child is reaped
		c.waited = true
		_ = c.cmd.Process.Kill()
		_ = c.cmd.Wait()
	}
	t.Fatalf("child process %s; its stderr:\n%s", what, c.stderr.String())
}
