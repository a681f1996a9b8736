package benchkit

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/oduflow/oduflow-go/internal/testproc"
)

// TestMain: the children StartChild starts are this test binary re-executed; the sub-command picks what
// the child does.
func TestMain(m *testing.M) {
	os.Exit(TestBinary(m.Run, func() {
		switch os.Args[1] {
		case "echo": // hello, then each line answered with its length, until quit or EOF
			if err := PrintHello(map[string]string{"child": "echo"}); err != nil {
				os.Exit(1)
			}
			_ = AnswerLines(context.Background(), func(line string) any { return len(line) })
		case "mute": // never says hello: ends at once
		case "deaf": // says hello, then ignores "quit" and its closed stdin
			_ = PrintHello(struct{}{})
			testproc.Park()
		}
	}))
}

func TestSummarize(t *testing.T) {
	var d []time.Duration
	for i := 100; i >= 1; i-- {
		d = append(d, time.Duration(i)*time.Millisecond)
	}
	s := Summarize(d, time.Millisecond)
	if s.N != 100 || s.Median != 50.5 || s.P99 != 99 || s.P90 != 90 || s.Min != 1 || s.Max != 100 {
		t.Fatalf("%+v", s)
	}
	if s := Summarize([]time.Duration{3 * time.Microsecond}, time.Microsecond); s.Median != 3 || s.P99 != 3 {
		t.Fatalf("%+v", s)
	}
	if s := Summarize(nil, time.Millisecond); s != (Summary{}) {
		t.Fatalf("no samples: %+v", s)
	}
	if Round3(1.23449) != 1.234 || Round3(2.0005) != 2.001 {
		t.Fatal("Round3")
	}
}

// TestCPUTime: spinning adds CPU time (on a loaded machine a wall-clock slice may get little of it, so
// the spin runs until 20 ms are counted, within 10 s), and an idle wait adds almost none.
func TestCPUTime(t *testing.T) {
	c0, t0 := CPUTime(), time.Now()
	x := 0
	for CPUTime()-c0 < 20*time.Millisecond {
		if time.Since(t0) > 10*time.Second {
			t.Fatalf("10 s of spinning counted %v of CPU time", CPUTime()-c0)
		}
		for range 100000 {
			x++
		}
	}
	c1 := CPUTime()
	// sleeping is the measured behaviour: it must cost no CPU time
	time.Sleep(100 * time.Millisecond)
	if d := CPUTime() - c1; d > 50*time.Millisecond || x == 0 {
		t.Fatalf("100 ms of sleep counted %v of CPU time", d)
	}
}

func TestRun(t *testing.T) {
	cmds := map[string]Command{
		"ok":    func(_ context.Context, args []string) (any, error) { return map[string]any{"args": args}, nil },
		"child": func(context.Context, []string) (any, error) { return nil, nil },
		"fail":  func(context.Context, []string) (any, error) { return nil, errors.New("boom") },
	}
	for _, c := range []struct {
		args           []string
		code           int
		stdout, stderr string
	}{
		{[]string{"ok", "-n", "3"}, 0, `{"args":["-n","3"]}` + "\n", ""},
		{[]string{"child"}, 0, "", ""},
		{[]string{"fail", "-x"}, 1, "", "prog: fail: boom\n"},
		{[]string{"nope"}, 2, "", "prog: unknown sub-command nope\n"},
		{nil, 2, "", "usage: prog <ok|fail>\n"},
	} {
		var out, errOut bytes.Buffer
		if code := run("prog", "prog <ok|fail>", cmds, c.args, &out, &errOut); code != c.code ||
			out.String() != c.stdout || errOut.String() != c.stderr {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", c.args, code, out.String(), errOut.String())
		}
	}
}

func TestChild(t *testing.T) {
	ctx := context.Background()
	var hello map[string]string
	c, err := StartChild(ctx, &hello, "echo")
	if err != nil {
		t.Fatal(err)
	}
	if hello["child"] != "echo" {
		t.Fatalf("hello %v", hello)
	}
	for _, line := range []string{"stats", "", "a longer line"} {
		var n int
		if err := c.Ask(line, &n); err != nil || n != len(line) {
			t.Fatalf("ask %q: %d %v", line, n, err)
		}
	}
	c.Stop()
	if err := c.Ask("stats", new(int)); err == nil {
		t.Fatal("a stopped child answered")
	}
	if c.cmd.ProcessState == nil || !c.cmd.ProcessState.Success() {
		t.Fatalf("the child did not end by itself on quit: %v", c.cmd.ProcessState)
	}

	if _, err := StartChild(ctx, &hello, "mute"); err == nil || !strings.Contains(err.Error(), "did not start") {
		t.Fatalf("a child without hello: %v", err)
	}
	if _, err := StartChild(ctx, &hello); err == nil {
		t.Fatal("a child without a sub-command started")
	}
}

// TestChildKilledOnContext: a child that ignores quit ends with the context that started it.
func TestChildKilledOnContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	c, err := StartChild(ctx, &struct{}{}, "deaf")
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	done := make(chan struct{})
	go func() { c.Stop(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("a child was not killed with its context")
	}
	if c.cmd.ProcessState.Success() {
		t.Fatal("a killed child exited 0")
	}
}

func TestAnswerLines(t *testing.T) {
	var out bytes.Buffer
	in := strings.NewReader("a\nbb\nquit\nccc\n")
	if err := answerLines(context.Background(), in, &out, func(l string) any { return l + "!" }); err != nil {
		t.Fatal(err)
	}
	if out.String() != "\"a!\"\n\"bb!\"\n" {
		t.Fatalf("%q", out.String())
	}
	// The end of the input ends it too.
	out.Reset()
	if err := answerLines(context.Background(), strings.NewReader("x"), &out, func(string) any { return 1 }); err != nil ||
		out.String() != "1\n" {
		t.Fatalf("%q %v", out.String(), err)
	}
}

func TestMem(t *testing.T) {
	hold := make([][]byte, 64)
	for i := range hold {
		hold[i] = make([]byte, 64<<10)
	}
	heap, stacks := LiveHeap()
	if heap < 4<<20 || stacks == 0 {
		t.Fatalf("heap %d, stacks %d with 4 MiB held", heap, stacks)
	}
	prof := t.TempDir() + "/heap.pprof"
	r := ReadMem(1000, prof)
	if r.HeapInuseMB < 4 || r.VmRSSMB <= 0 || r.VmHWMMB < r.VmRSSMB || r.Goroutines < 1 ||
		r.PerRequestB.Heap < 4<<10 || r.PerRequestB.RSS <= 0 {
		t.Fatalf("%+v", r)
	}
	if fi, err := os.Stat(prof); err != nil || fi.Size() == 0 {
		t.Fatalf("heap profile: %v", err)
	}
	if rss, err := ProcStatusMiB("VmHWM"); err != nil || rss < r.VmRSSMB {
		t.Fatalf("VmHWM %v %v", rss, err)
	}
	if _, err := ProcStatusMiB("NoSuchField"); err == nil {
		t.Fatal("a missing field read")
	}
	_ = hold[63][0]
}

func TestStartCPUProfile(t *testing.T) {
	path := t.TempDir() + "/cpu.pprof"
	stop, err := StartCPUProfile(path)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 1e6; i++ {
		_ = fmt.Sprint(i)
	}
	stop()
	stop() // a second stop does nothing
	if st, err := os.Stat(path); err != nil || st.Size() == 0 {
		t.Fatalf("profile: %v %v", st, err)
	}
	none, err := StartCPUProfile("")
	if err != nil {
		t.Fatal(err)
	}
	none()
	if _, err := StartCPUProfile(t.TempDir() + "/missing/dir/cpu.pprof"); err == nil {
		t.Fatal("a profile in a missing directory started")
	}
}
