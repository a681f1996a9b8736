package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/oduflow/oduflow-go/bench/internal/benchkit"
)

// TestMain lets the test binary stand in for the command: the rows re-execute the command as their
// child processes, which here is this binary (benchkit.StartChild marks them).
func TestMain(m *testing.M) { os.Exit(benchkit.TestBinary(m.Run, main)) }

func TestStamp(t *testing.T) {
	got := stamp(map[string]any{"_stamp": "2026-12-01T13:20:07.123456"})
	want := time.Date(2026, 12, 1, 13, 20, 7, 123456000, time.UTC)
	if !got.Equal(want) {
		t.Fatalf("%v", got)
	}
	if !stamp(map[string]any{"_stamp": "nonsense"}).IsZero() || !stamp(nil).IsZero() {
		t.Fatal("a bad stamp parsed")
	}
}

func TestCustomAndDecode(t *testing.T) {
	ctx := context.Background()
	r, err := cmdCustom(ctx, []string{"-n", "3"})
	if err != nil {
		t.Fatal(err)
	}
	if m := r.(map[string]any); m["cpu_ms_per_op"].(float64) <= 0 || m["n"].(int) != 3 {
		t.Fatalf("%v", m)
	}
	frame := filepath.Join("..", "..", "..", "salt", "testdata", "vectors", "eventbus", "event_ret_test_ping.frame.bin")
	if _, err := cmdDecode(ctx, []string{"-n", "100", "-frame", frame}); err != nil {
		t.Fatal(err)
	}
	// A frame that is not a job return is refused, not counted.
	frame = filepath.Join("..", "..", "..", "salt", "testdata", "vectors", "eventbus", "event_new.frame.bin")
	if _, err := cmdDecode(ctx, []string{"-n", "10", "-frame", frame}); err == nil {
		t.Fatal("a new-job frame was decoded as a return")
	}
}

func TestStartIdle(t *testing.T) {
	r, err := cmdStartIdle(context.Background(), []string{"-n", "5", "-concurrent", "10", "-dir", t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	m := r.(map[string]any)
	if s := m["start_idle_us"].(benchkit.Summary); s.N != 5 || s.Median <= 0 {
		t.Fatalf("%+v", s)
	}
	if m["concurrent_per_start_us"].(float64) <= 0 {
		t.Fatalf("%v", m)
	}
}

// TestInflight runs the in-flight row small: the simulator is a real child process, every request
// must be published and held, and Status must see them running.
func TestInflight(t *testing.T) {
	r, err := cmdInflight(context.Background(), []string{"-n", "40", "-status", "200", "-rate-publishes", "100",
		"-dir", t.TempDir(), "-publish-wait", "60s"})
	if err != nil {
		t.Fatal(err)
	}
	m := r.(map[string]any)
	if m["rss_mb"].(float64) <= 0 || m["status_ms"].(benchkit.Summary).N != 200 || m["start_ms"].(benchkit.Summary).N != 40 {
		t.Fatalf("%v", m)
	}
	if m["sim_publish_per_s"].(float64) <= 0 || m["first_start_to_last_publication_s"].(float64) <= 0 {
		t.Fatalf("%v", m)
	}
}

// TestReportSummary feeds bench_report.py a synthetic run and checks the summary.json contract.
func TestReportSummary(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3")
	}
	dir := t.TempDir()
	raw := filepath.Join(dir, "raw")
	if err := os.Mkdir(raw, 0o700); err != nil {
		t.Fatal(err)
	}
	write := func(name string, v any) {
		b, _ := json.Marshal(v)
		if err := os.WriteFile(filepath.Join(raw, name), append(b, '\n'), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for r, ms := range []float64{4, 6, 5} {
		n := r + 1
		write(jsonName("publish_rtt.ours", n), map[string]any{"ms": map[string]any{"median": ms}})
		write(jsonName("publish_rtt.anchor", n), map[string]any{"run_job_ms": map[string]any{"median": 10.0},
			"channel_ms": map[string]any{"median": 8.0}})
		write(jsonName("throughput_curve4.ours", n), map[string]any{"per_s": 300.0})
		write(jsonName("publish_breakdown.ours", n), map[string]any{"reused_us": map[string]any{"client_share": 200.0 + ms,
			"ping_pong_proof": 80.0}, "reused_total_ms": map[string]any{"median": 3.0}})
		write(jsonName("throughput.anchor", n), map[string]any{"per_s": 150.0})
		write(jsonName("inflight.ours", n), map[string]any{"n": 10000, "rss_mb": 100.0 + ms, "status_ms": map[string]any{"p99": 0.5}})
	}
	cmd := exec.Command(py, filepath.Join("..", "..", "..", "scripts", "bench_report.py"), dir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	b, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	var sum map[string]struct{ Ours, Anchor *float64 }
	if err := json.Unmarshal(b, &sum); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"publish_rtt_vs_persistent_channel", "publish_rtt_vs_run_job",
		"publish_throughput_vs_python_4_clients", "e2e_test_ping_overhead_ms", "start_new_idle_vs_fsync_floor",
		"custom_64k_ms", "inflight_10k_dispatcher_rss_mb", "inflight_10k_status_p99_ms", "event_reader_vs_salt_reader"} {
		if _, ok := sum[k]; !ok {
			t.Errorf("summary.json has no %s", k)
		}
	}
	p := sum["publish_rtt_vs_run_job"]
	if p.Ours == nil || *p.Ours != 5 || p.Anchor == nil || *p.Anchor != 10 {
		t.Fatalf("publish_rtt_vs_run_job %+v", p)
	}
	if b := sum["publish_rtt_breakdown"]; b.Ours == nil || *b.Ours != 205 || b.Anchor != nil {
		t.Fatalf("publish_rtt_breakdown %+v", b)
	}
	if !strings.Contains(string(out), "phases (us, medians): ping_pong_proof 80.0") {
		t.Errorf("report lacks the breakdown's phases:\n%s", out)
	}
	if r := sum["inflight_10k_dispatcher_rss_mb"]; r.Ours == nil || *r.Ours != 105 || r.Anchor != nil {
		t.Fatalf("rss %+v", r)
	}
	// 5/8 = 0.62x of the channel (goal 0.9x), 5/10 = 0.5x of run_job (goal 0.6x), 300/150 = 2x (goal 2x).
	for _, want := range []string{"| 0.62x | <= 0.9x | met |", "| 0.50x | <= 0.6x | met |", "| 2.00x | >= 2x | met |"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
}

func jsonName(prefix string, round int) string { return fmt.Sprintf("%s.%d.json", prefix, round) }

// TestReportInto: bench_report.py --into replaces the text between BENCHMARKS.md's markers with the
// report it prints, keeps every byte around them, and refuses (changing nothing) a file without them.
func TestReportInto(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3")
	}
	dir := t.TempDir()
	raw := filepath.Join(dir, "raw")
	if err := os.Mkdir(raw, 0o700); err != nil {
		t.Fatal(err)
	}
	for r, us := range []float64{30, 10, 20} {
		b, _ := json.Marshal(map[string]any{"wall_ms_per_op": 1.0, "cpu_ms_per_op": us / 10})
		if err := os.WriteFile(filepath.Join(raw, jsonName("custom.ours", r+1)), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	script := filepath.Join("..", "..", "..", "scripts", "bench_report.py")
	const before, after = "# Benchmarks\n\nBy hand.\n\n<!-- bench_report.py: begin -->\n",
		"<!-- bench_report.py: end -->\n\nAnalysis, by hand.\n"
	doc := filepath.Join(dir, "BENCHMARKS.md")
	if err := os.WriteFile(doc, []byte(before+"| an old table |\n"+after), 0o600); err != nil {
		t.Fatal(err)
	}
	report, err := exec.Command(py, script, dir, "--into", doc).Output()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(report), "| `custom_64k_ms` |") || !strings.Contains(string(report), "| 3 | 2.00 (1.00-3.00) |") {
		t.Fatalf("report:\n%s", report)
	}
	got, err := os.ReadFile(doc)
	if err != nil {
		t.Fatal(err)
	}
	if want := before + string(report) + after; string(got) != want {
		t.Fatalf("BENCHMARKS.md:\n%s\nwant:\n%s", got, want)
	}
	// Splicing again gives the same file.
	if _, err := exec.Command(py, script, dir, "--into", doc).Output(); err != nil {
		t.Fatal(err)
	}
	if again, _ := os.ReadFile(doc); string(again) != string(got) {
		t.Fatalf("a second splice changed the file:\n%s", again)
	}
	for _, bad := range []string{"no markers\n", after + before, before + before + after} {
		if err := os.WriteFile(doc, []byte(bad), 0o600); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(py, script, dir, "--into", doc).CombinedOutput()
		if err == nil || !strings.Contains(string(out), "must stand once each") {
			t.Errorf("%q: %v %s", bad, err, out)
		}
		if left, _ := os.ReadFile(doc); string(left) != bad {
			t.Errorf("a refused splice changed the file: %q", left)
		}
	}
}

// TestRawBusReader: the bare bus reader of e2e_ping -raw stamps a watched job's new and return tags
// when their bytes arrive, also when a tag is split across two reads, and ignores other jobs.
func TestRawBusReader(t *testing.T) {
	dir, err := os.MkdirTemp("", "rawbus") // short: a unix socket path is limited to ~100 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	path := filepath.Join(dir, "pub.ipc")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	r, err := newRawBusReader(context.Background(), "unix://"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.close()
	conn, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	const jid = "20261207050000123456"
	r.watch(jid)
	write := func(s string) {
		if _, err := conn.Write([]byte(s)); err != nil {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond) // one read each
	}
	write("\x82\xa4head\x80\xa4body\xc4\x30salt/job/20261207050000999999/ret/other") // another job
	if n, rt := r.result(jid, 0); !n.IsZero() || !rt.IsZero() {
		t.Fatal("another job's tags were taken for the watched one")
	}
	write("xx salt/job/" + jid + "/new\n\n")
	before := time.Now()
	write("yy salt/job/" + jid[:10]) // the return's tag in two reads
	write(jid[10:] + "/ret/web01\n\n")
	n, rt := r.result(jid, time.Second)
	if n.IsZero() || rt.IsZero() {
		t.Fatalf("tags not seen: new %v ret %v", n, rt)
	}
	if !n.Before(before) || rt.Before(before) {
		t.Fatalf("stamps out of order: new %v ret %v (the return's second part was written after %v)", n, rt, before)
	}
	if n2, _ := r.result("20261207050000000001", 0); !n2.IsZero() {
		t.Fatal("a job not watched has a result")
	}
}

// TestReportE2ETraceParts: bench_report.py puts the traced e2e_ping run's parts (this client's and the
// master's) into the overhead row's note, beside the row's own figure.
func TestReportE2ETraceParts(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3")
	}
	dir := t.TempDir()
	raw := filepath.Join(dir, "raw")
	if err := os.Mkdir(raw, 0o700); err != nil {
		t.Fatal(err)
	}
	med := func(v float64) map[string]any { return map[string]any{"median": v, "n": 10} }
	write := func(name string, r int, v any) {
		b, _ := json.Marshal(v)
		if err := os.WriteFile(filepath.Join(raw, jsonName(name, r)), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for r, over := range []float64{4, 6, 5} {
		row := map[string]any{"overhead_ms": med(over), "total_ms": med(60), "master_span_ms": med(55)}
		write("e2e.ours", r+1, row)
		row["breakdown_ms"] = map[string]any{"call_to_sent": med(0.7), "call_to_sent.tcp_connect": med(0.2),
			"call_to_sent.zmtp_handshake": med(0.4), "sent_to_master_new_stamp": med(2.5 + float64(r)),
			"master_jid_event_stamp_to_new_stamp": med(1.1), "raw_master_ret_stamp_to_bytes": med(1.2),
			"raw_ret_bytes_to_ret_seen": med(0.05)}
		write("e2e_trace.ours", r+1, row)
		write("e2e.anchor", r+1, map[string]any{"ms": med(90), "breakdown": map[string]any{
			"master_new_event_to_ret_event_ms": med(70), "client_send_to_master_new_event_ms": med(4.8)}})
	}
	out, err := exec.Command(py, filepath.Join("..", "..", "..", "scripts", "bench_report.py"), dir).CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	var line string
	for _, l := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(l, "| `e2e_test_ping_overhead_ms` |") {
			line = l
		}
	}
	for _, want := range []string{"| 3 | 5.00 (4.00-6.00) |", "| <= 5 ms | met |", "until the request is sent 0.700 (0.700-0.700)",
		"ZMTP handshake 0.400", "to its new stamp 3.50 (2.50-4.50)", "just before new: 1.10", "from its send: 4.80",
		"bare bus connection 1.20", "to our consumer 0.050 "} {
		if !strings.Contains(line, want) {
			t.Errorf("row lacks %q: %s", want, line)
		}
	}
}
