package receipt_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestMinionModulePython runs the minion module's own unittest suite (standard library only),
// so that `go test ./...` checks both halves of protocol 1 against the same case files.
func TestMinionModulePython(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("-short: the Python suite forks and kills real processes")
	}
	py := testPython(t)
	cmd := exec.CommandContext(t.Context(), py, "-m", "unittest", "discover", "-s", "minion/tests")
	cmd.Env = append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1", "PYTHONWARNINGS=ignore")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("python3 -m unittest failed: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	t.Logf("python unittest: %s", strings.Join(lines[max(0, len(lines)-3):], " | "))
}
