package oduflowtest

import (
	"testing"

	"github.com/oduflow/oduflow-go/oduflow"
)

// TestSuiteErrorCodes: the error codes the suite writes into claims are package oduflow's (the suite
// spells them so that it needs only package claims).
func TestSuiteErrorCodes(t *testing.T) {
	for got, want := range map[oduflow.ErrorCode]oduflow.ErrorCode{
		codeQuarantined:         oduflow.CodeQuarantined,
		codeNoTrustworthyReturn: oduflow.CodeNoTrustworthyReturn,
		codeAsserted:            oduflow.CodeAsserted,
	} {
		if got != want {
			t.Errorf("suite code %q, oduflow's %q", got, want)
		}
	}
}
