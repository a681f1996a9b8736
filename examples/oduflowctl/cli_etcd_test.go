package main

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/oduflow/oduflow-go/receipt"
)

// TestEtcdClaimsUnreachableExit3: an etcd claim store that does not answer is exit status 3 before
// anything is written or published.
func TestEtcdClaimsUnreachableExit3(t *testing.T) {
	t.Parallel()
	l := newLabMinion(t, nil)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	env := withEnv(l.env, "ODUFLOW_CLAIMS=etcd://"+addr+"/oduflow-test")
	r := run(t, env, "start", "configure", l.minion, receipt.NewRequestID())
	if r.code != ExitUnreachable || !strings.Contains(r.stderr, "etcd claim store") {
		t.Fatalf("want exit 3 naming the etcd claim store: %s", r)
	}
	if n := l.sim.PublicationCount("oduflow_job.run", ""); n != 0 {
		t.Fatalf("%d publications", n)
	}
	// custom start keeps its catalog in that etcd too: the same exit 3, and no file catalog appears.
	src := filepath.Join(t.TempDir(), "site.sls")
	if err := os.WriteFile(src, []byte("site:\n  test.succeed_without_changes:\n    - name: site\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r = run(t, env, "custom", "start", l.minion, src, receipt.NewRequestID())
	if r.code != ExitUnreachable || !strings.Contains(r.stderr, "custom start: etcd claim store") {
		t.Fatalf("custom start: want exit 3 naming the etcd claim store: %s", r)
	}
	if _, err := os.Stat(stateDir(l.env) + "-catalog"); !os.IsNotExist(err) {
		t.Fatalf("custom start with etcd claims created a file catalog: %v", err)
	}
	// Credentials given through the environment never reach the message.
	r = run(t, withEnv(env, "ODUFLOW_ETCD_USER=oduflow", "ODUFLOW_ETCD_PASSWORD=s3cret-pw"), "start", "configure",
		l.minion, receipt.NewRequestID())
	if r.code != ExitUnreachable || strings.Contains(r.stderr+r.stdout, "s3cret-pw") {
		t.Fatalf("want exit 3 without the password: %s", r)
	}
}

// TestEtcdClaimsExternal runs start --wait, then status, against the etcd cluster named by
// ODUFLOW_ETCD_ENDPOINTS (host:port[,host:port...]; credentials in ODUFLOW_ETCD_USER and
// ODUFLOW_ETCD_PASSWORD). The embedded-etcd end-to-end tests of the CLI live in the nested module
// oduflow/etcdstore/etcdtest, which can start a server.
func TestEtcdClaimsExternal(t *testing.T) {
	eps := os.Getenv("ODUFLOW_ETCD_ENDPOINTS")
	if eps == "" {
		t.Skip("ODUFLOW_ETCD_ENDPOINTS is not set: no external etcd cluster to run against")
	}
	l := newLabMinion(t, nil)
	env := withEnv(l.env, fmt.Sprintf("ODUFLOW_CLAIMS=etcd://%s/oduflowctl-test-%s", eps, receipt.NewRequestID()[:8]),
		"ODUFLOW_ETCD_USER="+os.Getenv("ODUFLOW_ETCD_USER"), "ODUFLOW_ETCD_PASSWORD="+os.Getenv("ODUFLOW_ETCD_PASSWORD"))
	req := receipt.NewRequestID()
	must(t, run(t, env, "start", "configure", l.minion, req, "--wait", "--interval", "50ms"), ExitOK)
	must(t, run(t, env, "status", "configure", l.minion, req), ExitOK)
	if n := l.sim.PublicationCount("oduflow_job.run", ""); n != 1 {
		t.Fatalf("%d publications of oduflow_job.run, want 1", n)
	}
}
