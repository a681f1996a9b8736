package etcdtest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/oduflow/oduflow-go/internal/testwait"
	"github.com/oduflow/oduflow-go/receipt"
)

// ctlStatus runs a status command until the request is terminal and returns its JSON answer.
func ctlStatus(t *testing.T, bin string, env []string, args ...string) map[string]any {
	t.Helper()
	var final map[string]any
	testwait.Until(t, fmt.Sprintf("%v never terminal", args), 60*time.Second, func() bool {
		r := runCtl(t, bin, env, args...)
		var resp map[string]any
		_ = json.Unmarshal([]byte(r.stdout), &resp)
		st, _ := resp["status"].(string)
		if !receipt.Status(st).Terminal() && st != string(receipt.StatusRunning) && st != "" {
			t.Fatalf("%v: %s", args, r)
		}
		final = resp
		return receipt.Status(st).Terminal()
	})
	return final
}

// TestCLICustomStartOnceAcrossHosts: two dispatcher hosts (oduflowctl processes with their own
// --state-dir and --claims etcd://...) run `custom start` of one state file on one server at once, under
// two request ids. The catalog is the etcd one (no <state-dir>-catalog directory appears): one execution
// is frozen, the other request points to it, the detached worker publishes one oduflow_job.run, and both
// requests end succeeded.
func TestCLICustomStartOnceAcrossHosts(t *testing.T) {
	bin := oduflowctl(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	st := newStore(t)
	sim, m := customMaster(t, ctx)
	base := []string{"ODUFLOW_SALT_PKI_DIR=" + sim.PKIDir(), "ODUFLOW_SALT_MASTER=" + sim.Addr(),
		"ODUFLOW_SALT_EVENTS=" + sim.EventsAddr(), "ODUFLOW_SALT_KEY_FILE=" + sim.KeyFile(),
		"ODUFLOW_CLAIMS=" + claimsURL(t, st.Prefix())}
	root := t.TempDir()
	hostEnv := func(h int) []string {
		return append(append([]string{}, base...), "ODUFLOW_STATE_DIR="+filepath.Join(root, fmt.Sprintf("host%d", h)))
	}
	cfg := receipt.NewRequestID()
	if r := runCtl(t, bin, hostEnv(0), "start", "configure", m.ID(), cfg); r.code != 0 {
		t.Fatalf("start configure: %s", r)
	}
	if got := ctlStatus(t, bin, hostEnv(1), "status", "configure", m.ID(), cfg); got["status"] != "succeeded" {
		t.Fatalf("configure: %v", got)
	}
	file := filepath.Join(root, "site.sls")
	if err := os.WriteFile(file, []byte("site:\n  test.succeed_with_changes:\n    - name: site\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	reqs := [2]string{receipt.NewRequestID(), receipt.NewRequestID()}
	var answers [2]map[string]any
	var wg sync.WaitGroup
	for h := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := runCtl(t, bin, hostEnv(h), "custom", "start", m.ID(), file, reqs[h])
			if r.code != 0 {
				t.Errorf("host %d custom start: %s", h, r)
			}
			_ = json.Unmarshal([]byte(r.stdout), &answers[h])
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	exec, _ := answers[0]["execution_id"].(string)
	if answers[1]["execution_id"] != exec || (exec != reqs[0] && exec != reqs[1]) {
		t.Fatalf("the hosts answer for executions %v and %v", answers[0]["execution_id"], answers[1]["execution_id"])
	}
	for h := range 2 {
		got := ctlStatus(t, bin, hostEnv(1-h), "custom", "status", m.ID(), reqs[h])
		if got["status"] != "succeeded" || got["execution_id"] != exec {
			t.Fatalf("request %s ended %v", reqs[h], got)
		}
		if _, err := os.Stat(filepath.Join(root, fmt.Sprintf("host%d-catalog", h))); !os.IsNotExist(err) {
			t.Fatalf("host %d created a file catalog: %v", h, err)
		}
	}
	if n := sim.PublicationCount("oduflow_job.run", ""); n != 2 {
		t.Fatalf("%d publications of oduflow_job.run, want 2 (configure and one custom)", n)
	}
	resp, err := st.Client().Get(ctx, st.Prefix()+"/catalog/exe/", clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil || resp.Count != 1 {
		t.Fatalf("executions in etcd: %v %v", resp, err)
	}
}
