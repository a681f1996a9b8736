package cli

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/oduflow/oduflow-go/internal/pyhost"
	"github.com/oduflow/oduflow-go/internal/simminion"
	"github.com/oduflow/oduflow-go/receipt"
	"github.com/oduflow/oduflow-go/salt/salttest"
)

// demoMinion returns the handler of the demo's minion, what it is, and how to stop it: the
// real oduflow_job.py (internal/pyhost) when python3 is available, else the Go model of the
// module (internal/simminion). pub is the minion's public key, for the simulated master's pki dir.
func demoMinion(ctx context.Context, dir, id string) (h salttest.MinionHandler, what string, stop func(), pub []byte, err error) {
	if py, err := exec.LookPath("python3"); err == nil {
		host, err := pyhost.Start(ctx, filepath.Join(dir, "minion"), pyhost.WithPython(py))
		if err == nil {
			pub, err := host.ProvisionKey(id)
			if err != nil {
				_ = host.Close()
				return nil, "", nil, nil, err
			}
			ver := pythonVersion(ctx, py)
			return host.Handler(id), "the real oduflow_job.py (" + ver + ", internal/pyhost; receipts in " +
				host.MinionDir(id) + ")", func() { _ = host.Close() }, pub, nil
		}
		// Fall through to the Go model: an unusable python3 should not stop the demo.
	}
	m := simminion.New(id,
		simminion.WithResult(receipt.ProfileConfigure, simminion.Result{Status: receipt.StatusSucceeded, Passed: 3, Total: 3}),
		simminion.WithResult(receipt.ProfileProduction, simminion.Result{Status: receipt.StatusFailed, Passed: 2, Total: 3}))
	return m.Handler(), "the Go model of oduflow_job (internal/simminion; python3 not found)", func() {}, m.PublicKeyPEM(), nil
}

func pythonVersion(ctx context.Context, py string) string {
	out, err := exec.CommandContext(ctx, py, "--version").CombinedOutput()
	if err != nil {
		return "python3"
	}
	return strings.TrimSpace(string(out))
}
