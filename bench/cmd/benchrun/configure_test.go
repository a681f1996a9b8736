package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/oduflow/oduflow-go/bench/internal/benchkit"
)

// synthTrace is a complete request on a made-up timeline (milliseconds after t0).
func synthTrace() (*cfgTrace, labJob) {
	t0 := time.Date(2026, 12, 1, 15, 0, 0, 0, time.UTC)
	at := func(ms float64) time.Time { return t0.Add(time.Duration(ms * float64(time.Millisecond))) }
	t := newTrace()
	t.t0 = t0
	t.steps = map[string]time.Time{"claimed": at(3), "lease": at(3.1), "dispatch_recorded": at(110)}
	t.capEnd, t.capDur = at(105), 101*time.Millisecond // capability check 4 -> 105
	t.runPubStart, t.runPubEnd = at(110.5), at(113)
	t.proofEnd, t.proofDur, t.proofs = at(590), 80*time.Millisecond, 1 // proof 510 -> 590
	t.outcome = at(593)
	t.create, t.intent, t.cas = 2*time.Millisecond, 4*time.Millisecond, []time.Duration{time.Millisecond, 2 * time.Millisecond}
	job := labJob{newStamp: at(112), retStamp: at(509), retSeen: at(509.5)}
	return t, job
}

func TestConfigureBreakdown(t *testing.T) {
	tr, job := synthTrace()
	s := tr.sample(job, 2500*time.Microsecond)
	ms := func(d time.Duration) float64 { return float64(d) / 1e6 }
	for name, c := range map[string][2]float64{
		"total": {ms(s.total), 593}, "apply": {ms(s.apply), 397}, "capability": {ms(s.capability), 101},
		"proof": {ms(s.proof), 80}, "rest": {ms(s.rest), 15}, "to_capability": {ms(s.toCapability), 4},
		"cap_to_publish": {ms(s.capToPublish), 5.5}, "publish_to_new": {ms(s.publishToNew), 1.5},
		"ret_to_proof": {ms(s.retToProof), 1}, "proof_to_commit": {ms(s.proofToCommit), 3},
		"beyond_writes": {ms(s.restBeyondWrites), 7}, "terminal": {ms(s.terminal), 2}, "run_publish": {ms(s.runPublish), 2.5},
	} {
		if d := c[0] - c[1]; d > 1e-6 || d < -1e-6 {
			t.Errorf("%s = %v ms, want %v", name, c[0], c[1])
		}
	}
	if err := s.check(); err != nil {
		t.Fatal(err)
	}
	// The run's own signed return proved it: no attest call, the proof piece is empty and the commit
	// follows the worker's "returned" step.
	signed, _ := synthTrace()
	signed.proofEnd, signed.proofDur, signed.proofs = time.Time{}, 0, 0
	signed.steps["returned"] = signed.t0.Add(510 * time.Millisecond)
	rs := signed.sample(job, 0)
	if rs.proof != 0 || rs.retToProof != time.Millisecond || rs.proofToCommit != 83*time.Millisecond {
		t.Errorf("signed run return: proof %v, ret_to_proof %v, proof_to_commit %v", rs.proof, rs.retToProof, rs.proofToCommit)
	}
	if err := rs.check(); err != nil {
		t.Fatal(err)
	}
	// Out of order: the run published before the capability answer, or a write longer than its phase.
	bad, _ := synthTrace()
	bad.runPubStart = bad.capEnd.Add(-time.Millisecond)
	if err := bad.sample(job, 0).check(); err == nil {
		t.Error("a publish before the capability answer passed the check")
	}
	bad, _ = synthTrace()
	bad.intent = 6 * time.Millisecond
	if err := bad.sample(job, 0).check(); err == nil {
		t.Error("an intent write longer than its phase passed the check")
	}
	late := job
	late.newStamp = tr.runPubStart.Add(-2 * time.Millisecond)
	if err := tr.sample(late, 0).check(); err == nil {
		t.Error("a new event stamped before the publish passed the check")
	}
}

// TestConfigureLab runs the row small against the lab master. It applies roles.client_stack on the lab
// minion, whose execution lock refuses a concurrent managed apply: the oduflow package's lab tests, run
// in parallel by `go test ./...`, would fail on it. So it runs only when asked (BENCHRUN_LAB=1), with the
// lab's variables set.
func TestConfigureLab(t *testing.T) {
	if os.Getenv("BENCHRUN_LAB") != "1" {
		t.Skip("BENCHRUN_LAB=1 runs a configure apply on the lab minion")
	}
	if _, err := readLab(); err != nil {
		t.Fatal("BENCHRUN_LAB=1 without the lab: ", err)
	}
	r, err := cmdConfigure(context.Background(), []string{"-n", "2", "-dir", t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	m := r.(map[string]any)
	total, apply, rest := m["total_ms"].(benchkit.Summary), m["apply_ms"].(benchkit.Summary), m["rest_ms"].(benchkit.Summary)
	if total.N != 2 || apply.Median <= 0 || rest.Median <= 0 || rest.Max >= total.Min {
		t.Fatalf("total %+v apply %+v rest %+v", total, apply, rest)
	}
	if c, p := m["capability_ms"].(benchkit.Summary), m["proof_ms"].(benchkit.Summary); c.Median <= 0 || p.Median <= 0 {
		t.Fatalf("capability %+v proof %+v", c, p)
	}
	t.Logf("total %.1f ms = apply %.1f + capability %.1f + proof %.1f + rest %.1f (medians)", total.Median,
		apply.Median, m["capability_ms"].(benchkit.Summary).Median, m["proof_ms"].(benchkit.Summary).Median, rest.Median)
}

// TestReportConfigureRow: bench_report.py turns configure rounds into the row, its goal and its note.
func TestReportConfigureRow(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3")
	}
	dir := t.TempDir()
	raw := filepath.Join(dir, "raw")
	if err := os.Mkdir(raw, 0o700); err != nil {
		t.Fatal(err)
	}
	med := func(v float64) map[string]any { return map[string]any{"median": v} }
	for r, rest := range []float64{12, 30, 18} {
		b, _ := json.Marshal(map[string]any{"total_ms": med(500), "apply_ms": med(300), "capability_ms": med(110),
			"proof_ms": med(75), "rest_ms": med(rest), "rest_beyond_writes_ms": med(5),
			"claim_writes_ms": map[string]any{"sum": med(rest - 5), "create": med(3), "intent": med(2), "terminal": med(2)},
			"rest_parts_ms":   map[string]any{"publish_to_new": med(2.5), "ret_to_proof": med(0.8)}})
		if err := os.WriteFile(filepath.Join(raw, jsonName("configure.ours", r+1)), b, 0o600); err != nil {
			t.Fatal(err)
		}
		b, _ = json.Marshal(map[string]any{"us": med(600)})
		if err := os.WriteFile(filepath.Join(raw, jsonName("cfgfsync.anchor", r+1)), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	out, err := exec.Command(py, filepath.Join("..", "..", "..", "scripts", "bench_report.py"), dir).CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	var line string
	for _, l := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(l, "| `e2e_configure_overhead_ms` |") {
			line = l
		}
	}
	for _, want := range []string{"| 3 | 18.0 (12.0-30.0) |", "| <= 20 ms | met |", "total 500 (500-500) = apply 300 (300-300)",
		"durable claim writes 13.0 (7.00-25.0)", "in the same rounds: 0.600 (0.600-0.600) ms"} {
		if !strings.Contains(line, want) {
			t.Errorf("row lacks %q: %s", want, line)
		}
	}
}
