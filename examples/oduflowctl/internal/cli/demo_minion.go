package cli

import (
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"

	"github.com/oduflow/oduflow-go/internal/pyhost"
	"github.com/oduflow/oduflow-go/internal/saltsim"
	"github.com/oduflow/oduflow-go/internal/simminion"
	"github.com/oduflow/oduflow-go/receipt"
)

// demoMinion returns the handler of the demo's minion, what it is, and how to stop it: the
// real oduflow_job.py (internal/pyhost) when python3 is available, else the Go model of the
// module (internal/simminion).
func demoMinion(ctx context.Context, dir, id string) (saltsim.MinionHandler, string, func(), error) {
	if py, err := exec.LookPath("python3"); err == nil {
		host, err := pyhost.Start(ctx, filepath.Join(dir, "minion"), pyhost.WithPython(py))
		if err == nil {
			ver := pythonVersion(ctx, py)
			return host.Handler(id), "the real oduflow_job.py (" + ver + ", internal/pyhost; receipts in " +
				host.MinionDir(id) + ")", func() { _ = host.Close() }, nil
		}
		// Fall through to the Go model: an unusable python3 should not stop the demo.
	}
	m := simminion.New(id,
		simminion.WithResult(receipt.ProfileConfigure, simminion.Result{Status: receipt.StatusSucceeded, Passed: 3, Total: 3}),
		simminion.WithResult(receipt.ProfileProduction, simminion.Result{Status: receipt.StatusFailed, Passed: 2, Total: 3}))
	return bindCustomDigests(m.Handler()), "the Go model of oduflow_job (internal/simminion; python3 not found)", func() {}, nil
}

// bindCustomDigests is a stopgap while internal/simminion ignores state_data_json: like the real
// module, it recomputes the digest of the custom payload, and puts it into the custom receipts
// the Go model returns (a payload whose digest does not match stays unbound, so untrusted).
func bindCustomDigests(h saltsim.MinionHandler) saltsim.MinionHandler {
	var mu sync.Mutex
	digests := map[string]string{} // request id -> verified payload digest
	return func(ctx context.Context, job saltsim.Job) (any, int) {
		if job.Fun == "oduflow_job.run" && len(job.Args) >= 3 && job.Args[1] == string(receipt.ProfileCustom) {
			request, _ := job.Args[0].(string)
			data, _ := job.Args[2].(string)
			var p struct {
				Digest string `json:"digest"`
				High   any    `json:"high"`
			}
			if json.Unmarshal([]byte(data), &p) == nil {
				if d, err := receipt.Digest(p.High); err == nil && d == p.Digest {
					mu.Lock()
					digests[request] = d
					mu.Unlock()
				}
			}
		}
		ret, code := h(ctx, job)
		if m, ok := ret.(map[string]any); ok && m["profile"] == string(receipt.ProfileCustom) && m["state_digest"] == "" {
			request, _ := m["request_id"].(string)
			mu.Lock()
			d := digests[request]
			mu.Unlock()
			if d != "" {
				bound := make(map[string]any, len(m))
				for k, v := range m {
					bound[k] = v
				}
				bound["state_digest"] = d
				ret = bound
			}
		}
		return ret, code
	}
}

func pythonVersion(ctx context.Context, py string) string {
	out, err := exec.CommandContext(ctx, py, "--version").CombinedOutput()
	if err != nil {
		return "python3"
	}
	return strings.TrimSpace(string(out))
}
