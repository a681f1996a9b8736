package oduflowtest

import (
	"testing"

	"github.com/oduflow/oduflow-go/oduflow/claims"
)

// TestSuiteErrorCodes: the error codes the suite writes into claims are package oduflow's (the suite
// spells them so that it needs only package claims).
func TestSuiteErrorCodes(t *testing.T) {
	for got, want := range map[claims.ErrorCode]claims.ErrorCode{
		codeQuarantined:         claims.CodeQuarantined,
		codeNoTrustworthyReturn: claims.CodeNoTrustworthyReturn,
		codeAsserted:            claims.CodeAsserted,
	} {
		if got != want {
			t.Errorf("suite code %q, oduflow's %q", got, want)
		}
	}
}
