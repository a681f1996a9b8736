package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/oduflow/oduflow-go/receipt"
)

func TestCustomValidateAndDigest(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	good := filepath.Join(dir, "good.yaml")
	reformatted := filepath.Join(dir, "reformatted.yaml")
	bad := filepath.Join(dir, "bad.yaml")
	write := func(p, s string) {
		if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(good, "motd:\n  file.managed:\n    - name: /etc/motd\n    - contents: hello\n")
	write(reformatted, "# same state, other formatting\nmotd:\n    file.managed:\n        - {name: /etc/motd}\n        - {contents: hello}\n")
	write(bad, "motd:\n  file.managed:\n    - name: {{ pillar.path }}\n")

	r := run(t, nil, "custom", "validate", good)
	must(t, r, 0)
	if oneLine(t, r.stdout) != `{"file":"`+good+`","valid":true}` {
		t.Fatalf("validate: %s", r)
	}
	r = run(t, nil, "custom", "validate", bad)
	must(t, r, 2)
	line := oneLine(t, r.stderr)
	if !strings.Contains(line, bad+":3:") || strings.Contains(line, "pillar.path") {
		t.Fatalf("invalid: want file:line:column and code, no source: %q", line)
	}
	if !strings.Contains(r.stdout, `"valid":false`) || !strings.Contains(r.stdout, `"line":3`) {
		t.Fatalf("invalid JSON: %s", r)
	}
	d1 := run(t, nil, "custom", "digest", good)
	d2 := run(t, nil, "custom", "digest", reformatted)
	must(t, d1, 0)
	must(t, d2, 0)
	digest := func(s string) string {
		i := strings.Index(s, `"digest":"`)
		if i < 0 {
			t.Fatalf("no digest in %q", s)
		}
		return s[i+10 : i+10+64]
	}
	if digest(d1.stdout) != digest(d2.stdout) {
		t.Fatalf("formatting changed the digest: %s / %s", d1.stdout, d2.stdout)
	}
}

func TestCustomStartNeedsConfigureThenSucceeds(t *testing.T) {
	t.Parallel()
	// The real module when python3 is available, and always the Go model (which binds custom digests too).
	t.Run("module", func(t *testing.T) { t.Parallel(); testCustomStart(t, newLab(t)) })
	t.Run("go-model", func(t *testing.T) { t.Parallel(); testCustomStart(t, newLabModel(t, false)) })
}

func testCustomStart(t *testing.T, l *lab) {
	file := filepath.Join(t.TempDir(), "motd.yaml")
	if err := os.WriteFile(file, []byte("motd:\n  file.managed:\n    - name: /etc/motd\n    - contents: hello\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := run(t, l.env, "custom", "start", l.minion, file)
	must(t, r, 1)
	if !strings.Contains(oneLine(t, r.stderr), "no succeeded configure") {
		t.Fatalf("custom before configure: %s", r)
	}
	must(t, run(t, l.env, "start", "configure", l.minion, "--wait", "--interval", "100ms"), 0)
	req := receipt.NewRequestID()
	r = run(t, l.env, "custom", "start", l.minion, file, req, "--wait", "--interval", "100ms")
	must(t, r, 0)
	if !strings.Contains(r.stdout, `"status":"succeeded"`) || !strings.Contains(r.stdout, `"execution_id":"`+req+`"`) {
		t.Fatalf("custom start: %s", r)
	}
	before := l.sim.PublicationCount("oduflow_job.run", "")
	r = run(t, l.env, "custom", "status", l.minion, req)
	must(t, r, 0)
	if !strings.Contains(r.stdout, `"status":"succeeded"`) {
		t.Fatalf("custom status: %s", r)
	}
	// The identical digest already succeeded: a new request reuses it without publishing.
	r = run(t, l.env, "custom", "start", l.minion, file)
	must(t, r, 0)
	if !strings.Contains(r.stdout, `"reused":"reuse_succeeded"`) || l.sim.PublicationCount("oduflow_job.run", "") != before {
		t.Fatalf("reuse: %s", r)
	}
	// --again is an explicit new execution.
	r = run(t, l.env, "custom", "start", l.minion, file, "--again", "--wait", "--interval", "100ms")
	must(t, r, 0)
	if l.sim.PublicationCount("oduflow_job.run", "") != before+1 {
		t.Fatalf("again did not publish once: %s", r)
	}
}
