package cli

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/oduflow/oduflow-go/oduflow/oduflowtest/fakeminion"
	"github.com/oduflow/oduflow-go/receipt"
	"github.com/oduflow/oduflow-go/salt/salttest"
)

// demoMinion returns the handler of the demo's minion, what it is, and how to stop it: the
// real oduflow_job.py (fakeminion.PythonHost) when python3 is available, else the Go model of the
// module (fakeminion.Model). pub is the minion's public key, for the simulated master's pki dir.
func demoMinion(ctx context.Context, dir, id string) (h salttest.MinionHandler, what string, stop func(), pub []byte, err error) {
	if py, err := exec.LookPath("python3"); err == nil {
		host, err := fakeminion.StartPython(ctx, filepath.Join(dir, "minion"), fakeminion.WithPython(py))
		if err == nil {
			pub, err := host.ProvisionKey(id)
			if err != nil {
				_ = host.Close()
				return nil, "", nil, nil, err
			}
			ver := pythonVersion(ctx, py)
			return host.Handler(id), "the real oduflow_job.py (" + ver + ", fakeminion.PythonHost; receipts in " +
				host.MinionDir(id) + ")", func() { _ = host.Close() }, pub, nil
		}
		// Fall through to the Go model: an unusable python3 should not stop the demo.
	}
	m := fakeminion.NewModel(id,
		fakeminion.WithResult(receipt.ProfileConfigure, fakeminion.Result{Status: receipt.StatusSucceeded, Passed: 3, Total: 3}),
		fakeminion.WithResult(receipt.ProfileProduction, fakeminion.Result{Status: receipt.StatusFailed, Passed: 2, Total: 3}))
	return m.Handle, "the Go model of oduflow_job (fakeminion.Model; python3 not found)", func() {}, m.PublicKeyPEM(), nil
}

func pythonVersion(ctx context.Context, py string) string {
	out, err := exec.CommandContext(ctx, py, "--version").CombinedOutput()
	if err != nil {
		return "python3"
	}
	return strings.TrimSpace(string(out))
}
