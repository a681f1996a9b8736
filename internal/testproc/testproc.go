// Package testproc runs the test binary itself as a child process, for tests that need a real second process
// (SIGKILL at a chosen step, flock held by another process): the child is selected by environment variables
// its TestMain reads, talks on stdout one line at a time, and is killed and reaped when the test ends.
// It is for tests only; the package and the tests that use it share one way of doing this.
package testproc

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Child is a running copy of the test binary.
type Child struct {
	Cmd   *exec.Cmd
	Stdin io.WriteCloser
	lines chan string
	wg    sync.WaitGroup
}

// Start runs os.Args[0] with no test selected and env (KEY=VALUE) added to this process's environment.
func Start(t testing.TB, env ...string) *Child {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &Child{Cmd: cmd, Stdin: stdin, lines: make(chan string, 1024)}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		defer close(c.lines)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			c.lines <- sc.Text()
		}
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return c
}

// Expect waits (20 s at most) for the child's next output line and checks its prefix.
func (c *Child) Expect(t testing.TB, prefix string) string {
	t.Helper()
	select {
	case l, ok := <-c.lines:
		if !ok || !strings.HasPrefix(l, prefix) {
			t.Fatalf("helper said %q (open=%v), want %s...", l, ok, prefix)
		}
		return l
	case <-time.After(20 * time.Second):
		t.Fatalf("helper did not say %s", prefix)
	}
	return ""
}

// Kill SIGKILLs the child and reaps it.
func (c *Child) Kill(t testing.TB) {
	t.Helper()
	if err := c.Cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = c.Cmd.Wait()
	c.wg.Wait()
}

// Rest returns all remaining output once the child exits, and its exit error.
func (c *Child) Rest(t testing.TB) ([]string, error) {
	t.Helper()
	var lines []string
	for l := range c.lines {
		lines = append(lines, l)
	}
	return lines, c.Cmd.Wait()
}

// Python returns the interpreter for the minion module's tests: Debian's /usr/bin/python3 when present
// (that is where python3-pycryptodome, python3-m2crypto and python3-cryptography live; a pyenv or venv
// python3 earlier on PATH usually has none of them), else python3 from PATH. Without one it skips, or fails
// when CI=true (the Python tests must run in CI).
func Python(t testing.TB) string {
	t.Helper()
	if _, err := os.Stat("/usr/bin/python3"); err == nil {
		return "/usr/bin/python3"
	}
	py, err := exec.LookPath("python3")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("python3 is not installed (CI=true: the minion module's Python tests must run)")
		}
		t.Skip("python3 is not installed: the minion module's Python tests cannot run here")
	}
	return py
}

// Park blocks the calling child process until the test kills it: for a child that has reached the step it is
// to be killed at (after announcing it on stdout). It waits for a signal nobody sends, not for a duration, so
// no timing decides when the child stops.
func Park() {
	never := make(chan os.Signal, 1)
	signal.Notify(never, syscall.SIGUSR2)
	for range never {
	}
}

// Stop sends SIGSTOP to the child and returns once the kernel reports it stopped (waitid with WSTOPPED,
// leaving the child waitable), so a test that checks what a frozen process still holds does not guess how
// long stopping takes.
func (c *Child) Stop(t testing.TB) {
	t.Helper()
	pid := c.Cmd.Process.Pid
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WSTOPPED|unix.WNOWAIT, nil)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			t.Fatalf("waiting for child %d to stop: %v", pid, err)
		}
		return
	}
}
