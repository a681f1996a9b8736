package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// realMasterEnv returns the environment naming a real master (the lab, the compose harness, or
// your own), or skips. See examples/harness/README.md.
func realMasterEnv(t *testing.T) (env []string, minion string) {
	t.Helper()
	minion = os.Getenv("ODUFLOW_SALT_MINION")
	if os.Getenv("ODUFLOW_SALT_MASTER") == "" || os.Getenv("ODUFLOW_SALT_EVENTS") == "" || minion == "" {
		t.Skip("no real salt-master: set ODUFLOW_SALT_MASTER, ODUFLOW_SALT_EVENTS, ODUFLOW_SALT_MINION and credentials (examples/harness/README.md)")
	}
	for _, k := range []string{"ODUFLOW_SALT_MASTER", "ODUFLOW_SALT_EVENTS", "ODUFLOW_SALT_KEY_FILE",
		"ODUFLOW_SALT_EAUTH", "ODUFLOW_SALT_USER", "ODUFLOW_SALT_PASSWORD", "ODUFLOW_SALT_PKI_DIR"} {
		if v := os.Getenv(k); v != "" {
			env = append(env, k+"="+v)
		}
	}
	return append(env, "ODUFLOW_STATE_DIR="+filepath.Join(t.TempDir(), "claims")), minion
}

// TestIntegrationCLIAgainstRealMaster runs the README's quick tour against a real master:
// ping, configure (succeeded), production (failed with counts), a repeated start, a custom
// state. The minion runs roles.client_stack and roles.client_production.
func TestIntegrationCLIAgainstRealMaster(t *testing.T) {
	env, minion := realMasterEnv(t)
	r := run(t, env, "ping", minion)
	t.Logf("oduflowctl ping: %s", r)
	must(t, r, 0)

	r = run(t, env, "start", "configure", minion, "--wait", "--interval", "250ms")
	t.Logf("oduflowctl start configure --wait: %s", r)
	must(t, r, 0)
	cfg := response(t, oneLine(t, r.stdout))
	if cfg["status"] != "succeeded" || cfg["passed"] != cfg["total"] || cfg["total"] == 0.0 {
		t.Fatalf("configure: %s", r.stdout)
	}

	r = run(t, env, "start", "production", minion, "--wait", "--interval", "250ms")
	t.Logf("oduflowctl start production --wait: %s", r)
	must(t, r, 1)
	prod := response(t, oneLine(t, r.stdout))
	if prod["status"] != "failed" || prod["passed"].(float64) >= prod["total"].(float64) {
		t.Fatalf("production: %s", r.stdout)
	}

	r = run(t, env, "start", "configure", minion, cfg["request_id"].(string))
	must(t, r, 0)
	if again := response(t, oneLine(t, r.stdout)); again["jid"] != cfg["jid"] {
		t.Fatalf("repeat: %s, first %v", r.stdout, cfg)
	}

	file := filepath.Join(t.TempDir(), "ready.yaml")
	src := "oduflow_cli_integration:\n  test.succeed_without_changes:\n    - name: oduflowctl integration\n"
	if err := os.WriteFile(file, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	r = run(t, env, "custom", "start", minion, file, "--wait", "--interval", "250ms")
	t.Logf("oduflowctl custom start --wait: %s", r)
	must(t, r, 0)
	if !strings.Contains(r.stdout, `"status":"succeeded","passed":1,"total":1`) {
		t.Fatalf("custom: %s", r.stdout)
	}
}
