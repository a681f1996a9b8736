package service_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/oduflow/oduflow-go/examples/controller/internal/service"
	"github.com/oduflow/oduflow-go/examples/internal/oduflowenv"
)

// TestPingEventBusUnreachableIs503: with the event bus unreachable, GET /v1/minions/{m}/ping is 503
// not_ready (unreachable, exit status 3) and its body names no file. It was 500 "internal" with the
// socket's path in the body.
func TestPingEventBusUnreachableIs503(t *testing.T) {
	t.Parallel()
	e := startSim(t)
	m := e.addMinion()
	bus := filepath.Join(t.TempDir(), "sock", "master_event_pub.ipc")
	srv := e.server(func(c *service.Config) { c.Settings.Events = "unix://" + bus })
	var got map[string]any
	code := srv.do(t, http.MethodGet, "/v1/minions/"+m.ID()+"/ping", nil, &got)
	if code != http.StatusServiceUnavailable || got["reason"] != "not_ready" || got["code"] != "unreachable" {
		t.Fatalf("want 503 not_ready unreachable, got %d %v", code, got)
	}
	raw, _ := json.Marshal(got)
	if strings.Contains(string(raw), bus) || strings.Contains(string(raw), "/sock/") {
		t.Fatalf("the answer names the socket's path: %s", raw)
	}
}

// TestOpenRefusesABadKeyFile: the controller refuses a key file oduflowctl refuses (group or other
// bits, or not a Salt user key) before it listens, with what the file must be; it used to start and
// answer 503 on /readyz only.
func TestOpenRefusesABadKeyFile(t *testing.T) {
	t.Parallel()
	e := startSim(t)
	dir := t.TempDir()
	open := filepath.Join(dir, ".root_key")
	key, err := os.ReadFile(e.sim.KeyFile())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(open, key, 0o644); err != nil {
		t.Fatal(err)
	}
	garbage := filepath.Join(dir, ".garbage_key")
	if err := os.WriteFile(garbage, []byte("password123\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ file, want string }{
		{open, "want 0600 or 0640"},
		{garbage, "not a Salt user key"},
		{filepath.Join(dir, "missing"), "ODUFLOW_SALT_KEY_FILE"},
	} {
		cfg, _ := e.serverConfig()
		cfg.Settings.KeyFile = tc.file
		svc, err := service.Open(context.Background(), cfg)
		if err == nil {
			_ = svc.Close(context.Background())
			t.Fatalf("%s: Open accepted the key file", tc.file)
		}
		var ce *oduflowenv.Error
		if !strings.Contains(err.Error(), tc.want) || !errors.As(err, &ce) {
			t.Fatalf("%s: want a usage error saying %q, got %v", tc.file, tc.want, err)
		}
	}
}

// TestConfigNamesNoFlag: the controller has no flags, so its configuration errors name the variables.
// "missing --master" named a flag it does not have.
func TestConfigNamesNoFlag(t *testing.T) {
	t.Parallel()
	for _, env := range []map[string]string{
		{},
		{"ODUFLOW_SALT_MASTER": "127.0.0.1:4506"},
		{"ODUFLOW_SALT_MASTER": "tcp://127.0.0.1:4506"},
		{"ODUFLOW_SALT_MASTER": "tcp://127.0.0.1:4506", "ODUFLOW_SALT_EVENTS": "/x"},
		{"ODUFLOW_SALT_MASTER": "tcp://127.0.0.1:4506", "ODUFLOW_SALT_EVENTS": "unix:///x"},
		{"ODUFLOW_SALT_MASTER": "tcp://127.0.0.1:4506", "ODUFLOW_SALT_EVENTS": "unix:///x", "ODUFLOW_SALT_EAUTH": "pam", "ODUFLOW_SALT_USER": "u"},
	} {
		_, err := service.ConfigFromEnv(func(k string) string { return env[k] })
		if err == nil {
			t.Fatalf("%v: accepted", env)
		}
		if strings.Contains(err.Error(), "--") {
			t.Errorf("%v: the message names a flag: %v", env, err)
		}
	}
}
