package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/oduflow/oduflow-go/internal/testwait"
)

// buildFaultBinary builds oduflowctl with the faultinject tag into a private directory.
func buildFaultBinary(t *testing.T) string {
	t.Helper()
	exe := filepath.Join(t.TempDir(), "oduflowctl-faultinject")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	build := exec.CommandContext(ctx, "go", "build", "-tags", "faultinject", "-o", exe, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build -tags faultinject: %v\n%s", err, out)
	}
	return exe
}

// workerProcess finds the detached worker of request: a process running exe whose command line names
// the request (a detached worker's arguments are exactly the minion and the request id).
func workerProcess(exe, request string) (int, bool) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, false
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if target, err := os.Readlink(filepath.Join("/proc", e.Name(), "exe")); err != nil || target != exe {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && strings.Contains(string(cmdline), request) {
			return pid, true
		}
	}
	return 0, false
}

// procState is the state letter of /proc/<pid>/stat (R, S, T, Z, ...); "" once the process is gone.
func procState(pid int) string {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return ""
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')') // comm may hold spaces and parentheses
	if i < 0 || i+2 >= len(s) {
		return ""
	}
	return s[i+2 : i+3]
}

// TestFaultInjectStopsTheWorkerAtEachStep: the CLI built with -tags faultinject stops its detached worker
// (SIGSTOP, state T) at the step ODUFLOW_FAULT_STOP_AT names, before the next step happened (the run
// publication is not out before publish_sending, and out from publish_replied on); after SIGCONT the
// request finishes. Without the tag the variable is ignored (the default binary runs straight through).
func TestFaultInjectStopsTheWorkerAtEachStep(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a second binary; skipped with -short")
	}
	exe := buildFaultBinary(t)
	l := newLab(t)
	steps := []struct {
		step      string
		published int // oduflow_job.run publications of the request while the worker is stopped
	}{
		{"claimed", 0}, {"lease", 0}, {"dispatch_recorded", 0}, {"publish_sending", 0},
		{"publish_replied", 1}, {"returned", 1}, {"committed", 1},
	}
	for _, s := range steps {
		env := append(append([]string{}, l.env...), "ODUFLOW_FAULT_STOP_AT="+s.step)
		r := runExe(t, exe, env, filepath.Join(t.TempDir(), "stderr"), "start", "configure", l.minion)
		must(t, r, 0)
		resp := response(t, oneLine(t, r.stdout))
		request, jid := resp["request_id"].(string), resp["jid"].(string)
		var pid int
		// the detached worker stops itself at the step (SIGSTOP): its state in /proc is the only sign
		testwait.Until(t, s.step+": the worker never stopped", 20*time.Second, func() bool {
			p, ok := workerProcess(exe, request)
			pid = p
			return ok && procState(p) == "T"
		})
		t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) }) // a no-op once it exited
		// Held for a while, it stays stopped, and nothing past the step happened.
		time.Sleep(300 * time.Millisecond)
		if st := procState(pid); st != "T" {
			t.Fatalf("%s: worker state %q after 300 ms, want T", s.step, st)
		}
		if n := l.sim.PublicationCount("oduflow_job.run", jid); n != s.published {
			t.Fatalf("%s: %d run publications while stopped, want %d", s.step, n, s.published)
		}
		if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
			t.Fatal(err)
		}
		r = run(t, l.env, "status", "configure", l.minion, request, "--wait", "--interval", "100ms")
		must(t, r, 0)
		if got := response(t, oneLine(t, r.stdout)); got["status"] != "succeeded" {
			t.Fatalf("%s: after SIGCONT: %s", s.step, r.stdout)
		}
		testwait.Until(t, s.step+": the worker did not exit after SIGCONT", 20*time.Second, func() bool {
			st := procState(pid)
			return st == "" || st == "Z"
		})
		if n := l.sim.PublicationCount("oduflow_job.run", jid); n != 1 {
			t.Fatalf("%s: %d run publications, want 1", s.step, n)
		}
	}
	// A misspelt step is a usage error before any claim is written.
	env := append(append([]string{}, l.env...), "ODUFLOW_FAULT_STOP_AT=dispatched")
	r := runExe(t, exe, env, filepath.Join(t.TempDir(), "stderr"), "start", "configure", l.minion)
	must(t, r, 2)
	// The default build ignores the variable: the request runs straight through.
	env = append(append([]string{}, l.env...), "ODUFLOW_FAULT_STOP_AT=dispatch_recorded")
	r = run(t, env, "start", "configure", l.minion, "--wait", "--interval", "100ms")
	must(t, r, 0)
}
