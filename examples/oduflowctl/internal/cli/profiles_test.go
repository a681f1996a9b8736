package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// ODUFLOW_PROFILES: the profiles command prints the table and its minion side; a bad table stops every
// command that needs it (exit 2, file:line and field); the table's profiles and id policy gate start
// before any connection.
func TestProfilesFromEnv(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "profiles.yaml")
	if err := os.WriteFile(good, []byte("profiles:\n  webserver: {sls: [roles.webserver, roles.monitoring]}\n"+
		"  full: {highstate: true}\nminion_ids: salt\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("profiles:\n  webserver: {sls: [roles..web]}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(profiles string, args ...string) (int, string, string) {
		env := map[string]string{"ODUFLOW_OUTPUT": "json", "ODUFLOW_PROFILES": profiles}
		var out, errb bytes.Buffer
		code := RunEnv(context.Background(), args, &out, &errb, func(k string) string { return env[k] })
		return code, out.String(), errb.String()
	}
	if code, out, _ := run(good, "profiles"); code != 0 ||
		!strings.Contains(out, `"sha256":"6fdb3482797e80eee371c71efedc11600cf21dbb6f308cb0c7d73f2e50a1971d"`) ||
		!strings.Contains(out, `{"name":"webserver","sls":["roles.webserver","roles.monitoring"]}`) {
		t.Fatalf("profiles: %d %s", code, out)
	}
	if code, out, _ := run(good, "profiles", "--minion-config"); code != 0 || !strings.HasPrefix(strings.Split(out, "\n")[1], "oduflow_profiles: {") {
		t.Fatalf("minion config: %d %s", code, out)
	}
	if code, out, _ := run("", "profiles"); code != 0 || !strings.Contains(out, `"default":true`) {
		t.Fatalf("default: %d %s", code, out)
	}
	if code, _, errs := run(bad, "start", "webserver", "web01.lab.example"); code != ExitUsage ||
		!strings.Contains(errs, bad+":2: profiles.webserver.sls[0]: not a Salt sls name") {
		t.Fatalf("bad table: %d %q", code, errs)
	}
	if code, _, errs := run(good, "start", "configure", "web01.lab.example"); code != ExitUsage ||
		!strings.Contains(errs, `unknown profile "configure": want one of full, webserver`) {
		t.Fatalf("profile outside the table: %d %q", code, errs)
	}
	if code, _, errs := run(good, "start", "webserver", "web*"); code != ExitUsage || !strings.Contains(errs, "want a Salt minion id") {
		t.Fatalf("glob id: %d %q", code, errs)
	}
	if code, _, errs := run("", "start", "configure", "web01.lab.example"); code != ExitUsage ||
		!strings.Contains(errs, "want client-<canonical lowercase UUID>") {
		t.Fatalf("host id under the seeds' table: %d %q", code, errs)
	}
}
