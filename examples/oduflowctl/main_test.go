package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/oduflow/oduflow-go/oduflow/oduflowtest/fakeminion"
	"github.com/oduflow/oduflow-go/receipt"
	"github.com/oduflow/oduflow-go/salt/salttest"
)

// binary is the oduflowctl built once for all tests.
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "oduflowctl-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "oduflowctl")
	build := exec.Command("go", "build", "-o", binary, ".")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build oduflowctl:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	killLeftovers(binary)
	os.RemoveAll(dir)
	os.Exit(code)
}

// killLeftovers ends the processes still running the binary built for these tests: detached
// workers of a failed test, or commands of a test that stopped early. Every such process was
// started by these tests (the binary path is private to this run); others are not touched.
func killLeftovers(exe string) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		if target, err := os.Readlink(filepath.Join("/proc", e.Name(), "exe")); err == nil && target == exe {
			fmt.Fprintf(os.Stderr, "oduflowctl tests: ending leftover process %d\n", pid)
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// result is one finished run of the binary.
type result struct {
	code           int
	stdout, stderr string
}

// run executes the binary with args and exactly env (plus PATH and HOME). Output goes to
// regular files (readable while the command runs; detached workers write to
// <state-dir>/worker.log, not to the command's stdout/stderr).
func run(t *testing.T, env []string, args ...string) result {
	t.Helper()
	return runTee(t, env, filepath.Join(t.TempDir(), "stderr"), args...)
}

// runTee is run with the command's stderr in the file errPath (readable while it runs).
func runTee(t *testing.T, env []string, errPath string, args ...string) result {
	return runExe(t, binary, env, errPath, args...)
}

// runExe is runTee of the executable exe (a binary built with other tags).
func runExe(t *testing.T, exe string, env []string, errPath string, args ...string) result {
	dir := t.TempDir()
	outF, err := os.Create(filepath.Join(dir, "stdout"))
	if err != nil {
		t.Errorf("runTee: %v", err)
		return result{code: -1}
	}
	errF, err := os.Create(errPath)
	if err != nil {
		t.Errorf("runTee: %v", err)
		return result{code: -1}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, exe, args...)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}, env...)
	cmd.Stdout, cmd.Stderr = outF, errF
	err = cmd.Run()
	outF.Close()
	errF.Close()
	r := result{code: 0}
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			t.Errorf("run %v: %v", args, err) // Errorf: runTee also runs outside the test goroutine
			return result{code: -1}
		}
		r.code = ee.ExitCode()
	}
	o, _ := os.ReadFile(filepath.Join(dir, "stdout"))
	e, _ := os.ReadFile(errPath)
	r.stdout, r.stderr = string(o), string(e)
	return r
}

func (r result) String() string {
	return fmt.Sprintf("exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
}

// lab is a simulator with one simulated minion, and the environment that names it.
type lab struct {
	sim    *salttest.Master
	minion string
	python bool // the minion runs the real module (python3 found)
	env    []string
}

func newLab(t *testing.T, opts ...salttest.Option) *lab {
	t.Helper()
	return newLabModel(t, true, opts...)
}

// newLabModel is newLab; with python false the minion is always the Go model (fakeminion.Model).
func newLabModel(t *testing.T, python bool, opts ...salttest.Option) *lab {
	t.Helper()
	dir := t.TempDir()
	sim, err := salttest.Start(context.Background(), append([]salttest.Option{salttest.WithDir(dir)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sim.Close() })
	l := &lab{sim: sim, minion: "client-" + receipt.NewRequestID()}
	if py, err := exec.LookPath("python3"); err == nil && python {
		// The real module, run by a Python host behind the simulated minion.
		host, err := fakeminion.StartPython(context.Background(), filepath.Join(t.TempDir(), "py"), fakeminion.WithPython(py))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = host.Close() })
		l.python = true
		if err := fakeminion.AddPython(sim, host, l.minion); err != nil {
			t.Fatal(err)
		}
	} else {
		m := fakeminion.NewModel(l.minion,
			fakeminion.WithResult(receipt.ProfileConfigure, fakeminion.Result{Status: receipt.StatusSucceeded, Passed: 3, Total: 3}),
			fakeminion.WithResult(receipt.ProfileProduction, fakeminion.Result{Status: receipt.StatusFailed, Passed: 2, Total: 3}))
		if err := fakeminion.Add(sim, m); err != nil {
			t.Fatal(err)
		}
	}
	l.env = []string{
		"ODUFLOW_SALT_MASTER=" + sim.Addr(),
		"ODUFLOW_SALT_EVENTS=" + sim.EventsAddr(),
		"ODUFLOW_SALT_KEY_FILE=" + sim.KeyFile(),
		"ODUFLOW_SALT_PKI_DIR=" + sim.PKIDir(),
		"ODUFLOW_STATE_DIR=" + filepath.Join(t.TempDir(), "claims"),
	}
	return l
}

// response decodes a response object and checks that it has exactly the seven keys.
func response(t *testing.T, line string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(line), &m); err != nil {
		t.Fatalf("not JSON: %q: %v", line, err)
	}
	want := []string{"error_code", "jid", "minion_id", "passed", "request_id", "status", "total"}
	if len(m) != len(want) {
		t.Fatalf("response keys %v, want exactly %v", keys(m), want)
	}
	for _, k := range want {
		if _, ok := m[k]; !ok {
			t.Fatalf("response %s lacks %q", line, k)
		}
	}
	return m
}

func keys(m map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func oneLine(t *testing.T, s string) string {
	t.Helper()
	s = strings.TrimRight(s, "\n")
	if strings.Contains(s, "\n") || s == "" {
		t.Fatalf("want exactly one line, got %q", s)
	}
	return s
}

func must(t *testing.T, r result, code int) {
	t.Helper()
	if r.code != code {
		t.Fatalf("want exit %d, got %s", code, r)
	}
}
