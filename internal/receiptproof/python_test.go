package receiptproof_test

import (
	"os"
	"os/exec"
	"testing"
)

// testPython returns the interpreter for the minion module's tests: Debian's /usr/bin/python3 when
// present (that is where python3-pycryptodome, python3-m2crypto and python3-cryptography live; a
// pyenv or venv python3 earlier on PATH usually has none of them), else python3 from PATH.
func testPython(t testing.TB) string {
	t.Helper()
	if st, err := os.Stat("/usr/bin/python3"); err == nil && st.Mode().IsRegular() || err == nil && st.Mode()&os.ModeSymlink != 0 {
		return "/usr/bin/python3"
	}
	py, err := exec.LookPath("python3")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("python3 is not installed (CI=true: the minion module's Python tests must run)")
		}
		t.Skip("python3 is not installed: the minion module's Python tests cannot run here")
	}
	return py
}
