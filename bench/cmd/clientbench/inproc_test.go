package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestInprocRowSmall runs the in-process row small (300 minions, 2 rounds): every round checks
// that each minion returned once with no gap (runAll), and the row reports every measure.
func TestInprocRowSmall(t *testing.T) {
	rep := &report{Rounds: map[string][]map[string]float64{}}
	if err := inprocRow(rep, 300, 2); err != nil {
		t.Fatal(err)
	}
	rounds := rep.Rounds["inprocess_300"]
	if len(rounds) != 2 {
		t.Fatalf("%d rounds recorded, want 2", len(rounds))
	}
	for i, m := range rounds {
		for _, k := range []string{"ours_returns_per_s", "decode_returns_per_s", "cpu_us_per_return", "peak_heap_mib",
			"idle_heap_mib"} {
			if m[k] <= 0 {
				t.Errorf("round %d: %s = %v", i, k, m[k])
			}
		}
		if m["peak_heap_mib"] < m["run_heap_mib"] {
			t.Errorf("round %d: run heap %v above the peak %v", i, m["run_heap_mib"], m["peak_heap_mib"])
		}
	}
	var out bytes.Buffer
	rep.print(&out)
	if !strings.Contains(out.String(), "ours / baseline") || strings.Contains(out.String(), "ours/Salt") {
		t.Errorf("report:\n%s", out.String())
	}
}
