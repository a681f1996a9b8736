package cli

import (
	"context"
	"errors"
	"flag"

	"github.com/oduflow/oduflow-go/examples/internal/oduflowenv"
	"github.com/oduflow/oduflow-go/oduflow"
	"github.com/oduflow/oduflow-go/oduflow/catalog"
	"github.com/oduflow/oduflow-go/oduflow/claims"
	"github.com/oduflow/oduflow-go/oduflow/etcdstore"
	"github.com/oduflow/oduflow-go/oduflow/filestore"
	"github.com/oduflow/oduflow-go/receipt"
	"github.com/oduflow/oduflow-go/salt"
)

// Exit statuses (shared with the controller's JSON errors, see oduflowenv). A script decides from them
// alone whether it may start a new request.
const (
	ExitOK           = oduflowenv.ExitOK           // succeeded, or done (also running or not_started without --wait)
	ExitFailed       = oduflowenv.ExitFailed       // failed: a known terminal failure; a new request may follow
	ExitUsage        = oduflowenv.ExitUsage        // bad input or configuration (credentials, directories, flags); nothing written
	ExitUnreachable  = oduflowenv.ExitUnreachable  // master, event bus or claim store unreachable; nothing written
	ExitRefused      = oduflowenv.ExitRefused      // refused by the master (authentication, authorization)
	ExitUnknown      = oduflowenv.ExitUnknown      // outcome not proven: never start a replacement; reconcile
	ExitDamaged      = oduflowenv.ExitDamaged      // damaged or missing claim store (or catalog record)
	ExitStillRunning = oduflowenv.ExitStillRunning // still running when --wait timed out; the request goes on
)

// exitTable documents the statuses for --help and the README, in order.
const exitTable = `Exit status:
  0  succeeded, or done (running or not_started without --wait)
  1  failed: a known terminal failure; a new request may follow
  2  bad input or configuration (flags, ids, unreadable or malformed credentials, directories)
  3  master, event bus or claim store unreachable; nothing written
  4  refused by the master (authentication, authorization)
  5  unknown: outcome not proven; never start a replacement, reconcile
  6  damaged or missing claim store (a read never creates one)
  7  still running when --wait timed out; the request goes on
`

// errConfig marks a configuration error found by the CLI itself (exit status 2).
var errConfig = errors.New("oduflowctl: configuration error")

// exitFor maps an error to its exit status: the one place where errors become exit statuses. The order
// matters: the most specific proof first (a damaged store, refused credentials), the vaguest last.
func exitFor(err error) int {
	if err == nil || errors.Is(err, flag.ErrHelp) {
		return ExitOK
	}
	var s silentExit
	if errors.As(err, &s) {
		return int(s)
	}
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	// The standard library's errors.Is is enough: the library marks its sentinels so that it sees them
	// (internal/errmark), and its cockroachdb wrappers unwrap to their causes.
	switch {
	case errors.Is(err, claims.ErrCorruptClaim), errors.Is(err, catalog.ErrCorrupt), errors.Is(err, filestore.ErrNoStore):
		return ExitDamaged
	case errors.Is(err, salt.ErrKeyFile), errors.Is(err, errConfig):
		return ExitUsage // unreadable or malformed credentials, directories, addresses
	case errors.Is(err, salt.ErrAuthentication), errors.Is(err, salt.ErrAuthorization):
		return ExitRefused
	case errors.Is(err, claims.ErrInvalidInput), errors.Is(err, oduflow.ErrMismatch), errors.Is(err, receipt.ErrInvalidID),
		errors.Is(err, receipt.ErrUnknownProfile), errors.Is(err, catalog.ErrInvalid):
		return ExitUsage
	case errors.Is(err, etcdstore.ErrOutcomeUnknown):
		return ExitUnknown // a write to etcd that may have committed: never "nothing written"
	case errors.Is(err, oduflow.ErrNotReady),
		errors.Is(err, claims.ErrClaimStore), errors.Is(err, salt.ErrNotSent):
		return ExitUnreachable // nothing was written
	case errors.Is(err, oduflow.ErrUncertain), errors.Is(err, oduflow.ErrUnresolved), errors.Is(err, oduflow.ErrNotFenced),
		errors.Is(err, salt.ErrOutcomeUnknown),
		errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return ExitUnknown
	}
	return ExitFailed
}

// statusCode is the exit status of a response: its status, the recorded error code (a failure the master
// refused is 4), and whether a --wait ran out while it was still running.
func statusCode(s receipt.Status, code claims.ErrorCode, waitTimedOut bool) int {
	switch s {
	case receipt.StatusSucceeded:
		return ExitOK
	case receipt.StatusFailed:
		if code == claims.CodeAuthentication || code == claims.CodeAuthorization {
			return ExitRefused
		}
		return ExitFailed
	case receipt.StatusUnknown:
		return ExitUnknown
	}
	if waitTimedOut {
		return ExitStillRunning
	}
	return ExitOK
}
