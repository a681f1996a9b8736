package benchkit

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"time"
)

// A child process is this program re-executed with a sub-command, so that what it runs (a simulated
// master, an etcd member) spends its own CPU and memory, not the measured process's. The protocol is JSON
// lines: the child prints one hello line when ready, then answers each request line on its stdin with one
// line; "quit" or the end of its stdin ends it.

// childEnv marks a process StartChild started, so that a test binary standing in for the program
// (TestBinary) runs the program's main, not the tests.
const childEnv = "BENCHKIT_CHILD"

// stopGrace is how long Stop waits for a child to end after "quit" before it kills it.
const stopGrace = 20 * time.Second

// Child is a running child process.
type Child struct {
	name  string
	cmd   *exec.Cmd
	in    *bufio.Writer
	inRaw io.Closer
	out   *bufio.Scanner
}

// StartChild re-executes this program with args (args[0] the child's sub-command; its stderr is this
// process's) and decodes the child's hello line into hello. A child that ends or prints something else
// first is stopped and is an error.
func StartChild(ctx context.Context, hello any, args ...string) (*Child, error) {
	if len(args) == 0 {
		return nil, errors.New("benchkit: a child needs a sub-command")
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, exe, args...)
	cmd.Stderr = os.Stderr
	cmd.Env = append(os.Environ(), childEnv+"=1")
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	c := &Child{name: args[0], cmd: cmd, in: bufio.NewWriter(in), inRaw: in, out: bufio.NewScanner(out)}
	if !c.out.Scan() {
		c.Stop()
		return nil, fmt.Errorf("child %s did not start", c.name)
	}
	if err := json.Unmarshal(c.out.Bytes(), hello); err != nil {
		c.Stop()
		return nil, fmt.Errorf("child %s: hello line: %w", c.name, err)
	}
	return c, nil
}

// Ask sends one request line and decodes the child's answer line into answer.
func (c *Child) Ask(line string, answer any) error {
	if _, err := c.in.WriteString(line + "\n"); err != nil {
		return err
	}
	if err := c.in.Flush(); err != nil {
		return err
	}
	if !c.out.Scan() {
		return fmt.Errorf("child %s ended", c.name)
	}
	return json.Unmarshal(c.out.Bytes(), answer)
}

// Stop sends "quit", closes the child's stdin and waits for it to end, killing it after stopGrace.
func (c *Child) Stop() {
	_, _ = c.in.WriteString("quit\n")
	_ = c.in.Flush()
	_ = c.inRaw.Close()
	done := make(chan struct{})
	go func() { _ = c.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(stopGrace):
		_ = c.cmd.Process.Kill()
		<-done
	}
}

// The child's side.

// TestBinary is the body of a TestMain of a program with children: in a child StartChild started (the
// test binary re-executed) it runs main and returns 0; otherwise it runs the tests (runTests: m.Run) and
// returns their exit code.
//
//	func TestMain(m *testing.M) { os.Exit(benchkit.TestBinary(m.Run, main)) }
func TestBinary(runTests func() int, main func()) int {
	if os.Getenv(childEnv) == "1" {
		main()
		return 0
	}
	return runTests()
}

// PrintHello prints the child's hello line: v as JSON on stdout.
func PrintHello(v any) error { return printLine(os.Stdout, v) }

// AnswerLines answers each request line on stdin with answer(line) as a JSON line on stdout, until a
// "quit" line, the end of stdin or ctx's end.
func AnswerLines(ctx context.Context, answer func(line string) any) error {
	return answerLines(ctx, os.Stdin, os.Stdout, answer)
}

func answerLines(ctx context.Context, in io.Reader, out io.Writer, answer func(line string) any) error {
	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(in)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			case <-ctx.Done():
				return
			}
		}
	}()
	for {
		select {
		case line, ok := <-lines:
			if !ok || line == "quit" {
				return nil
			}
			if err := printLine(out, answer(line)); err != nil {
				return err
			}
		case <-ctx.Done():
			return nil
		}
	}
}

func printLine(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(w, string(b))
	return err
}
