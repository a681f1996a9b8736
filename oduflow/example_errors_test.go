package oduflow_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/oduflow/oduflow-go/oduflow"
	"github.com/oduflow/oduflow-go/oduflow/claims"
	"github.com/oduflow/oduflow-go/receipt"
)

// The errors below stand for what CustomStart, Start and Resume return (wrapped, as a caller's own layers
// wrap them with fmt.Errorf and %w); the standard library's errors package is all a caller needs.

// A CustomStart refused because the last failure of the definition is not confirmed names the failed
// execution: a dispatched one is confirmed by the minion's receipt (Reconcile FromMinion).
func ExampleNeedsConfirmationError() {
	err := fmt.Errorf("apply motd: %w", &oduflow.NeedsConfirmationError{
		RequestID: "9b2e4c1a-6d3f-4e8b-a1c2-3d4e5f6a7b8c", Dispatched: true})

	var nc *oduflow.NeedsConfirmationError
	if errors.As(err, &nc) {
		fmt.Println("matches ErrNeedsConfirmation:", errors.Is(err, oduflow.ErrNeedsConfirmation))
		if nc.Dispatched {
			fmt.Println("confirm with Reconcile FromMinion:", nc.RequestID)
		}
	}
	// Output:
	// matches ErrNeedsConfirmation: true
	// confirm with Reconcile FromMinion: 9b2e4c1a-6d3f-4e8b-a1c2-3d4e5f6a7b8c
}

// A CustomStart refused because another custom execution on the server has an unknown outcome names it:
// reconcile that one, never start a replacement.
func ExampleUncertainError() {
	err := fmt.Errorf("apply motd: %w", &oduflow.UncertainError{RequestID: "1f2e3d4c-5b6a-4978-8a9b-0c1d2e3f4a5b"})

	var ue *oduflow.UncertainError
	if errors.As(err, &ue) {
		fmt.Println("matches ErrUncertain:", errors.Is(err, oduflow.ErrUncertain))
		fmt.Println("reconcile first:", ue.RequestID)
	}
	// Output:
	// matches ErrUncertain: true
	// reconcile first: 1f2e3d4c-5b6a-4978-8a9b-0c1d2e3f4a5b
}

// A detached worker that could not be started: nothing was published (Start's claim is failed,
// CodeWorkerLaunch). Cause is for the log; it is not in the Unwrap chain, so even a cancelled launch reads
// as the known failure it is.
func ExampleWorkerLaunchError() {
	err := fmt.Errorf("start: %w", &oduflow.WorkerLaunchError{
		RequestID: "7c6b5a49-3827-4165-9e8d-7c6b5a493827", Cause: context.Canceled})

	var le *oduflow.WorkerLaunchError
	if errors.As(err, &le) {
		fmt.Println("matches ErrWorkerLaunch:", errors.Is(err, oduflow.ErrWorkerLaunch))
		fmt.Println("reads as interrupted:", errors.Is(err, context.Canceled))
		fmt.Println("request:", le.RequestID, "cause:", le.Cause)
	}
	// Output:
	// matches ErrWorkerLaunch: true
	// reads as interrupted: false
	// request: 7c6b5a49-3827-4165-9e8d-7c6b5a493827 cause: context canceled
}

// A caller decides from a response's status whether the run may have happened (unknown: never start a
// replacement) and from its ErrorCode what to fix before a new request id.
func ExampleErrorCode() {
	next := func(r oduflow.Response) string {
		switch {
		case r.Status == receipt.StatusUnknown:
			return "reconcile " + r.RequestID + " (" + string(r.ErrorCode) + "); never start a replacement"
		case r.Status != receipt.StatusFailed:
			return "nothing to do"
		}
		switch r.ErrorCode {
		case claims.CodeQuarantined:
			return "reconcile the client's unresolved request, then start a new request id"
		case claims.CodeAuthentication, claims.CodeAuthorization:
			return "fix the credentials, then start a new request id"
		case claims.CodeCapability, claims.CodeRuntimeGuard:
			return "fix the minion module, then start a new request id"
		}
		return "a known failure: a new request id may follow"
	}
	for _, r := range []oduflow.Response{
		{RequestID: "r1", Status: receipt.StatusFailed, ErrorCode: claims.CodeQuarantined},
		{RequestID: "r2", Status: receipt.StatusFailed, ErrorCode: claims.CodeAuthorization},
		{RequestID: "r3", Status: receipt.StatusUnknown, ErrorCode: claims.CodeOutcomeUnknown},
		{RequestID: "r4", Status: receipt.StatusFailed, ErrorCode: claims.CodeNeverRan},
		{RequestID: "r5", Status: receipt.StatusSucceeded},
	} {
		fmt.Println(r.RequestID+":", next(r))
	}
	// Output:
	// r1: reconcile the client's unresolved request, then start a new request id
	// r2: fix the credentials, then start a new request id
	// r3: reconcile r3 (publish_outcome_unknown); never start a replacement
	// r4: a known failure: a new request id may follow
	// r5: nothing to do
}
