package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/oduflow/oduflow-go/bench/internal/benchsim"
)

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
	logFile := filepath.Join(t.TempDir(), "reader.jsonl")
	env := map[string]string{"ANCHORS_EVENTS": sim.EventsAddr(), "ANCHORS_END_TAG": "bench/end",
		"ANCHORS_PREFIX": "salt/job/", "BENCHREADER_LOG": logFile}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	errc := make(chan error, 1)
	go func() {
		err := run(func(k string) string { return env[k] }, inR, outW)
		_ = outW.CloseWithError(err)
		errc <- err
	}()
	out := bufio.NewScanner(outR)
	if !out.Scan() || out.Text() != "ready" {
		t.Fatalf("first line %q, want ready (%v)", out.Text(), out.Err())
	}
	if err := sim.WaitUntil(ctx, func() bool { return sim.EventReaders() >= 1 }); err != nil {
		t.Fatal("the reader never subscribed")
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
	if _, err := inW.Write([]byte("go\n")); err != nil {
		t.Fatal(err)
	}
	if !out.Scan() {
		t.Fatalf("no result line: %v", out.Err())
	}
	line := out.Text()
	var res struct {
		Count, Gaps int
		Elapsed     float64 `json:"elapsed_s"`
		Reads       int64
	}
	if err := json.Unmarshal([]byte(line), &res); err != nil {
		t.Fatalf("%q: %v", line, err)
	}
	if res.Count != n || res.Gaps != 0 || res.Elapsed <= 0 || res.Reads < 1 {
		t.Fatalf("%s", line)
	}
	if err := <-errc; err != nil {
		t.Fatalf("run: %v", err)
	}
	logged, err := os.ReadFile(logFile)
	if err != nil || strings.TrimSpace(string(logged)) != line {
		t.Fatalf("log %q (%v), want %q", logged, err, line)
	}
}

func TestRunNeedsItsVariables(t *testing.T) {
	err := run(func(string) string { return "" }, strings.NewReader(""), io.Discard)
	if err == nil || !strings.Contains(err.Error(), "must be set") {
		t.Fatalf("%v", err)
	}
}
