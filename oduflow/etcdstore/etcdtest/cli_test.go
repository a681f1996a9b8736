package etcdtest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/oduflow/oduflow-go/internal/testwait"
	"github.com/oduflow/oduflow-go/receipt"
)

// The oduflowctl binary, built once per test binary in the examples module, the one that holds it (the
// go.work at the repository root makes that, and what it requires, the working copy).
var ctlBinary struct {
	once sync.Once
	path string
	err  error
}

func oduflowctl(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and runs the oduflowctl binary")
	}
	ctlBinary.once.Do(func() {
		ctlBinary.path = filepath.Join(tempRoot, "oduflowctl")
		cmd := exec.Command("go", "build", "-o", ctlBinary.path, "github.com/oduflow/oduflow-go/examples/oduflowctl")
		cmd.Dir = filepath.Join("..", "..", "..", "examples")
		out, err := cmd.CombinedOutput()
		if err != nil {
			ctlBinary.err = fmt.Errorf("go build oduflowctl: %v\n%s", err, out)
		}
	})
	if ctlBinary.err != nil {
		t.Fatal(ctlBinary.err)
	}
	return ctlBinary.path
}

type ctlResult struct {
	code           int
	stdout, stderr string
}

func (r ctlResult) String() string {
	return fmt.Sprintf("exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
}

// runCtl runs the binary with exactly env (plus PATH and HOME).
func runCtl(t *testing.T, bin string, env []string, args ...string) ctlResult {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), "ODUFLOW_OUTPUT=json"}, env...)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	r := ctlResult{stdout: out.String(), stderr: errb.String()}
	if ee, ok := err.(*exec.ExitError); ok {
		r.code = ee.ExitCode()
	} else if err != nil {
		t.Errorf("run oduflowctl %v: %v", args, err)
		r.code = -1
	}
	return r
}

// claimsURL is the --claims value naming the shared member and prefix.
func claimsURL(t testing.TB, prefix string) string {
	t.Helper()
	return "etcd://" + strings.TrimPrefix(sharedSingle.c.clients[0], "http://") + prefix
}

// countClaims counts the claim keys under prefix.
func countClaims(t testing.TB, cli *clientv3.Client, prefix string) int64 {
	t.Helper()
	resp, err := cli.Get(context.Background(), prefix+"/claims/", clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		t.Fatal(err)
	}
	return resp.Count
}

// TestCLIStartsOnceAcrossDispatchers: three dispatcher hosts (oduflowctl processes, each with its own
// --state-dir, all with --claims etcd://...) start ONE request many times at once. Exactly one claim exists
// and exactly one oduflow_job.run is published; every start exits 0 and the request ends succeeded.
func TestCLIStartsOnceAcrossDispatchers(t *testing.T) {
	bin := oduflowctl(t)
	st := newStore(t)
	m := newProtoMinion(newMinion())
	sim := startMaster(t, m)
	base := []string{"ODUFLOW_SALT_PKI_DIR=" + sim.PKIDir(), "ODUFLOW_SALT_MASTER=" + sim.Addr(), "ODUFLOW_SALT_EVENTS=" + sim.EventsAddr(),
		"ODUFLOW_SALT_KEY_FILE=" + sim.KeyFile(), "ODUFLOW_CLAIMS=" + claimsURL(t, st.Prefix())}
	const hosts, perHost = 3, 4
	req := receipt.NewRequestID()
	var wg sync.WaitGroup
	results := make(chan ctlResult, hosts*perHost)
	var stateDirs []string
	for h := range hosts {
		dir := filepath.Join(t.TempDir(), fmt.Sprintf("host%d", h))
		stateDirs = append(stateDirs, dir)
		env := append(append([]string{}, base...), "ODUFLOW_STATE_DIR="+dir)
		for range perHost {
			wg.Add(1)
			go func() {
				defer wg.Done()
				results <- runCtl(t, bin, env, "start", "configure", m.id, req)
			}()
		}
	}
	wg.Wait()
	close(results)
	for r := range results {
		if r.code != 0 {
			t.Errorf("start: %s", r)
		}
	}
	env := append(append([]string{}, base...), "ODUFLOW_STATE_DIR="+stateDirs[0])
	testwait.Until(t, "the request never succeeded", 60*time.Second, func() bool {
		r := runCtl(t, bin, env, "status", "configure", m.id, req)
		var resp struct {
			Status receipt.Status `json:"status"`
		}
		_ = json.Unmarshal([]byte(r.stdout), &resp)
		if resp.Status != receipt.StatusSucceeded && resp.Status != receipt.StatusRunning && resp.Status != "" {
			t.Fatalf("status: %s", r)
		}
		return resp.Status == receipt.StatusSucceeded
	})
	if n := countClaims(t, st.Client(), st.Prefix()); n != 1 {
		t.Fatalf("%d claims, want 1", n)
	}
	if n := sim.PublicationCount("oduflow_job.run", ""); n != 1 {
		t.Fatalf("%d publications of oduflow_job.run, want 1", n)
	}
	if m.runCount() != 1 {
		t.Fatalf("minion ran %d times", m.runCount())
	}
	// The worker's log lives in the state dir of the host whose start created the claim.
	var logs int
	for _, d := range stateDirs {
		if _, err := os.Stat(filepath.Join(d, "worker.log")); err == nil {
			logs++
		}
	}
	if logs == 0 {
		t.Fatal("no worker.log in any --state-dir")
	}
}
