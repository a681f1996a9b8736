package main

import (
	"context"
	"os"
	"testing"

	"github.com/oduflow/oduflow-go/bench/internal/benchkit"
)

// TestMain lets the test binary stand in for the command: the rows re-execute the command as their
// child processes, which here is this binary (benchkit.StartChild marks them).
func TestMain(m *testing.M) { os.Exit(benchkit.TestBinary(m.Run, main)) }

// TestLatency runs the latency row small: a real etcd member in a child process, every operation
// sampled n times.
func TestLatency(t *testing.T) {
	r, err := cmdLatency(context.Background(), []string{"-n", "3", "-dir", t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	m := r.(map[string]any)
	for _, k := range []string{"start_us", "txn_us", "status_us", "read_us", "claim_lock_one_read_us"} {
		if s := m[k].(benchkit.Summary); s.N != 3 || s.Median <= 0 {
			t.Errorf("%s: %+v", k, s)
		}
	}
}

// TestInflight runs the in-flight row small: the etcd member and the simulator are child processes,
// every request must be published and held.
func TestInflight(t *testing.T) {
	r, err := cmdInflight(context.Background(), []string{"-n", "20", "-dir", t.TempDir(), "-publish-wait", "60s"})
	if err != nil {
		t.Fatal(err)
	}
	m := r.(map[string]any)
	if m["published"].(int64) != 20 || len(m["unpublished"].(map[string]int)) != 0 {
		t.Fatalf("%v", m)
	}
	if m["rss_mb"].(float64) <= 0 || m["heap_per_request_kb"].(float64) <= 0 || m["starts_s"].(float64) <= 0 {
		t.Fatalf("%v", m)
	}
}
