package cli

import (
	"context"
	stderrors "errors"
	"flag"

	crdb "github.com/cockroachdb/errors"

	"github.com/oduflow/oduflow-go/examples/internal/oduflowenv"
	"github.com/oduflow/oduflow-go/oduflow"
	"github.com/oduflow/oduflow-go/oduflow/catalog"
	"github.com/oduflow/oduflow-go/oduflow/etcdstore"
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
	ExitDamaged      = oduflowenv.ExitDamaged      // damaged claim store (or catalog record)
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
  6  damaged claim store
  7  still running when --wait timed out; the request goes on
`

// errConfig marks a configuration error found by the CLI itself (exit status 2).
var errConfig = stderrors.New("oduflowctl: configuration error")

// is reports whether err matches target, for the standard library's errors.Is first. The cockroachdb
// check is the fallback for errors a package still marks with cockroachdb's errors.Mark (invisible to the
// standard library); it sees errmark's marks too.
func is(err, target error) bool { return stderrors.Is(err, target) || crdb.Is(err, target) }

// exitFor maps an error to its exit status: the one place where errors become exit statuses. The order
// matters: the most specific proof first (a damaged store, refused credentials), the vaguest last.
func exitFor(err error) int {
	if err == nil || stderrors.Is(err, flag.ErrHelp) {
		return ExitOK
	}
	var s silentExit
	if stderrors.As(err, &s) {
		return int(s)
	}
	var ee *exitError
	if stderrors.As(err, &ee) {
		return ee.code
	}
	switch {
	case is(err, oduflow.ErrCorruptClaim), is(err, catalog.ErrCorrupt):
		return ExitDamaged
	case is(err, salt.ErrKeyFile), is(err, errConfig):
		return ExitUsage // unreadable or malformed credentials, directories, addresses
	case is(err, salt.ErrAuthentication), is(err, salt.ErrAuthorization):
		return ExitRefused
	case is(err, oduflow.ErrInvalidInput), is(err, oduflow.ErrMismatch), is(err, receipt.ErrInvalidID),
		is(err, receipt.ErrUnknownProfile), is(err, catalog.ErrInvalid):
		return ExitUsage
	case is(err, etcdstore.ErrOutcomeUnknown):
		return ExitUnknown // a write to etcd that may have committed: never "nothing written"
	case is(err, oduflow.ErrNotReady),
		is(err, oduflow.ErrClaimStore), is(err, salt.ErrNotSent):
		return ExitUnreachable // nothing was written
	case is(err, oduflow.ErrUncertain), is(err, oduflow.ErrUnresolved), is(err, oduflow.ErrNotFenced),
		is(err, salt.ErrOutcomeUnknown),
		is(err, context.Canceled), is(err, context.DeadlineExceeded):
		return ExitUnknown
	}
	return ExitFailed
}

// statusCode is the exit status of a response: its status, the recorded error code (a failure the master
// refused is 4), and whether a --wait ran out while it was still running.
func statusCode(s receipt.Status, code oduflow.ErrorCode, waitTimedOut bool) int {
	switch s {
	case receipt.StatusSucceeded:
		return ExitOK
	case receipt.StatusFailed:
		if code == oduflow.CodeAuthentication || code == oduflow.CodeAuthorization {
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
