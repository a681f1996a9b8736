package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
)

// harnessFS loads the real harness files (the parent directory of this package).
func harnessFS(t *testing.T) fstest.MapFS {
	t.Helper()
	m := fstest.MapFS{}
	for _, name := range []string{"compose.yaml", "master.d/oduflow.conf", "minion.d/oduflow.conf", "harness.env", "eauth_users.txt", "salt/roles/client_stack.sls", "salt/roles/client_production.sls"} {
		data, err := os.ReadFile(filepath.Join("..", filepath.FromSlash(name)))
		if err != nil {
			t.Fatal(err)
		}
		m[name] = &fstest.MapFile{Data: data, Mode: 0o644}
	}
	return m
}

func TestShippedHarnessIsConsistent(t *testing.T) {
	problems, err := Check(harnessFS(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(problems) > 0 {
		t.Fatalf("problems: %q", problems)
	}
}

func TestCheckFindsProblems(t *testing.T) {
	cases := []struct {
		name, file, old, new, want string
		syntax                     bool
	}{
		{"job cache on", "master.d/oduflow.conf", "job_cache: False", "job_cache: True", "job_cache must be False", false},
		{"pillar cache missing", "master.d/oduflow.conf", "pillar_cache: False", "", "pillar_cache must be False", false},
		{"returner", "master.d/oduflow.conf", "job_cache: False", "job_cache: False\nmaster_job_cache: redis", "master_job_cache must not be set", false},
		{"acl too wide", "master.d/oduflow.conf", "        - test.ping", "        - test.ping\n        - state.apply", "want exactly", false},
		{"acl other target", "master.d/oduflow.conf", "'client-*'", "'*'", "want only client-*", false},
		{"duplicate key", "master.d/oduflow.conf", "job_cache: False", "job_cache: False\njob_cache: False", "already defined", true},
		{"bad minion id", "minion.d/oduflow.conf", "id: client-", "id: Client-", "is not client-", false},
		{"env minion mismatch", "harness.env", "ODUFLOW_SALT_MINION=client-7", "ODUFLOW_SALT_MINION=client-8", "is not the minion id", false},
		{"env password mismatch", "harness.env", "ODUFLOW_SALT_PASSWORD=", "ODUFLOW_SALT_PASSWORD=x", "does not match eauth_users.txt", false},
		{"env key missing", "harness.env", "ODUFLOW_SALT_EAUTH=file\n", "", "ODUFLOW_SALT_EAUTH is missing", false},
		{"no minion service", "compose.yaml", "  salt-minion:", "  salt-client:", "service salt-minion is missing", false},
		{"wrong salt version", "compose.yaml", "salt:3006.0}\n    container_name: oduflow-harness-salt-master", "salt:3007.1}\n    container_name: oduflow-harness-salt-master", "is not Salt 3006", false},
		{"port on all interfaces", "compose.yaml", `"127.0.0.1:14506:4506"`, `"14506:4506"`, "is not bound to the host's loopback", false},
		{"port of the labs", "compose.yaml", `"127.0.0.1:14506:4506"`, `"127.0.0.1:4606:4506"`, "which the Salt labs use", false},
		{"request port not published", "compose.yaml", `"127.0.0.1:14506:4506"`, `"127.0.0.1:14505:4505"`, "does not publish its request port 4506", false},
		{"env master port mismatch", "harness.env", "tcp://127.0.0.1:14506", "tcp://127.0.0.1:14507", "is not the port compose.yaml publishes", false},
		{"env event bus elsewhere", "harness.env", "_state/run/master/master_event_pub.ipc", "run/master/master_event_pub.ipc", "is not the event bus compose.yaml bind-mounts", false},
		{"env root key elsewhere", "harness.env", "_state/cache/master/.root_key", "cache/.root_key", "is not the root key compose.yaml bind-mounts", false},
		{"no file roots", "compose.yaml", "        target: /srv/salt\n", "        target: /srv/pillar\n", "mounts no file roots", false},
		{"undeclared volume", "compose.yaml", "  minion-pki: {}", "", "undeclared volume", false},
		{"bad yaml", "compose.yaml", "services:", "services: [", "compose.yaml", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fsys := harnessFS(t)
			src := string(fsys[tc.file].Data)
			if !strings.Contains(src, tc.old) {
				t.Fatalf("%s does not contain %q", tc.file, tc.old)
			}
			fsys[tc.file] = &fstest.MapFile{Data: []byte(strings.Replace(src, tc.old, tc.new, 1))}
			problems, err := Check(fsys)
			if tc.syntax {
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("err = %v, want one containing %q", err, tc.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(strings.Join(problems, "\n"), tc.want) {
				t.Fatalf("problems %q, want one containing %q", problems, tc.want)
			}
		})
	}
}
