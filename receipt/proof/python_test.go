package proof_test

import (
	"testing"

	"github.com/oduflow/oduflow-go/internal/testproc"
)

// testPython is testproc.Python (shared with the other packages that run the minion module).
func testPython(t testing.TB) string { t.Helper(); return testproc.Python(t) }
