package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/oduflow/oduflow-go/bench/internal/benchkit"
	"github.com/oduflow/oduflow-go/bench/internal/benchsim"
)

// TestMain: the reader under test is this binary re-executed (BENCHKIT_CHILD=1 runs main).
func TestMain(m *testing.M) { os.Exit(benchkit.TestBinary(m.Run, main)) }

// TestRound runs one anchors round against the simulated master's real event bus: the reader connects
// and says ready, the events are fired while it reads nothing, "go" releases it, and it must count the
// events under the prefix (not the others) up to the end tag, with no gap, on stdout and in the log.
func TestRound(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sim, stop, err := benchsim.StartInProcess(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	logFile := filepath.Join(t.TempDir(), "reader.jsonl")
	cmd := exec.CommandContext(ctx, exe)
	cmd.Env = append(os.Environ(), "BENCHKIT_CHILD=1", "ANCHORS_EVENTS="+sim.EventsAddr(),
		"ANCHORS_END_TAG=bench/end", "ANCHORS_PREFIX=salt/job/", "BENCHREADER_LOG="+logFile)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	outPipe, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	out := bufio.NewScanner(outPipe)
	if !out.Scan() || out.Text() != "ready" {
		t.Fatalf("first line %q, want ready", out.Text())
	}
	for sim.EventReaders() < 1 {
		if ctx.Err() != nil {
			t.Fatal("the reader never subscribed")
		}
		time.Sleep(10 * time.Millisecond)
	}
	const n = 200
	for i := range n {
		tag := fmt.Sprintf("salt/job/2026120100000000%04d/ret/m", i)
		if err := sim.FireEvent(tag, map[string]any{"jid": i, "return": true}); err != nil {
			t.Fatal(err)
		}
		if i%50 == 0 { // not counted: another prefix
			if err := sim.FireEvent("salt/auth", map[string]any{"id": i}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := sim.FireEvent("bench/end", map[string]any{"done": true}); err != nil {
		t.Fatal(err)
	}
	if _, err := in.Write([]byte("go\n")); err != nil {
		t.Fatal(err)
	}
	if !out.Scan() {
		t.Fatalf("no result line: %v", out.Err())
	}
	line := out.Text()
	var res struct {
		Count, Gaps int
		Elapsed     float64 `json:"elapsed_s"`
		CPU         float64 `json:"cpu_s"`
		Reads       int64
	}
	if err := json.Unmarshal([]byte(line), &res); err != nil {
		t.Fatalf("%q: %v", line, err)
	}
	if res.Count != n || res.Gaps != 0 || res.Elapsed <= 0 || res.Reads < 1 {
		t.Fatalf("%s", line)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("reader exit: %v", err)
	}
	logged, err := os.ReadFile(logFile)
	if err != nil || strings.TrimSpace(string(logged)) != line {
		t.Fatalf("log %q (%v), want %q", logged, err, line)
	}
}

func TestRunNeedsItsVariables(t *testing.T) {
	t.Setenv("ANCHORS_EVENTS", "")
	if err := run(); err == nil || !strings.Contains(err.Error(), "must be set") {
		t.Fatalf("%v", err)
	}
}
