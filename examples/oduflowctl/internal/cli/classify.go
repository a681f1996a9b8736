package cli

import (
	"github.com/cockroachdb/errors"

	"github.com/oduflow/oduflow-go/oduflow"
	"github.com/oduflow/oduflow-go/receipt"
	"github.com/oduflow/oduflow-go/salt"
)

// classify maps a library error to an exit status: 2 for bad input (including a request id
// bound to another profile or minion), 3 when the master cannot be reached, 1 otherwise.
func classify(err error) int {
	switch {
	case errors.Is(err, oduflow.ErrInvalidInput),
		errors.Is(err, oduflow.ErrProfileMismatch),
		errors.Is(err, oduflow.ErrMinionMismatch),
		errors.Is(err, receipt.ErrInvalidMinionID),
		errors.Is(err, receipt.ErrInvalidRequestID),
		errors.Is(err, receipt.ErrUnknownProfile):
		return ExitUsage
	case errors.Is(err, salt.ErrNotSent):
		return ExitUnreachable
	}
	return ExitFailed
}
