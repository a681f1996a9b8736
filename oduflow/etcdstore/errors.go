package etcdstore

import (
	"context"
	"errors"
	"fmt"

	crdb "github.com/cockroachdb/errors"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/oduflow/oduflow-go/internal/errmark"
	"github.com/oduflow/oduflow-go/oduflow/claims"
)

// ErrOutcomeUnknown: a write transaction was sent but its acknowledgement was lost (timeout, leader
// change, connection reset, cancelled context): it may or may not have committed. The caller must re-read
// before deciding anything. A Create whose outcome is unknown means "maybe created": the dispatcher
// returns the error to its caller, who re-reads (Status or a repeated Start with the same request id,
// which finds the claim if it exists); nothing is launched for it, so a claim that did commit stays in
// phase claimed and is never published. Visible to the standard library's errors.Is.
var ErrOutcomeUnknown = errors.New("etcdstore: transaction outcome unknown")

// definitelyNotApplied reports whether err proves that the server refused the request before applying
// it (bad request, permission, quota, auth): those are the only write errors that are not outcome-unknown.
func definitelyNotApplied(err error) bool {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var code codes.Code
	if ee, ok := crdb.UnwrapAll(err).(rpctypes.EtcdError); ok {
		code = ee.Code()
	} else if st, ok := status.FromError(err); ok {
		code = st.Code()
	} else {
		return false
	}
	switch code {
	case codes.InvalidArgument, codes.PermissionDenied, codes.Unauthenticated, codes.ResourceExhausted,
		codes.FailedPrecondition, codes.OutOfRange, codes.Unimplemented, codes.NotFound:
		return true
	}
	return false
}

// writeErr classifies the error of a write transaction that was (possibly) sent.
func writeErr(err error, what string) error {
	w := crdb.Wrapf(err, "etcdstore: %s", crdb.Safe(what))
	if definitelyNotApplied(err) {
		return w
	}
	return errmark.Mark(&unknownOutcome{cause: w}, ErrOutcomeUnknown)
}

// unknownOutcome carries the behaviour the dispatcher's worker looks for (OutcomeUnknown, through
// errors.As) to tell a lost acknowledgement from a refusal without importing this package. It adds
// nothing to the message or to the redacted form.
type unknownOutcome struct{ cause error }

func (e *unknownOutcome) Error() string { return e.cause.Error() }
func (e *unknownOutcome) Unwrap() error { return e.cause }

// OutcomeUnknown reports that the write may or may not have committed.
func (e *unknownOutcome) OutcomeUnknown() bool { return true }

// SafeFormatError prints nothing of its own: the cause's redaction-safe form is the whole message.
func (e *unknownOutcome) SafeFormatError(crdb.Printer) (next error) { return e.cause }

// Format keeps %+v the cause's (cockroachdb's formatter).
func (e *unknownOutcome) Format(s fmt.State, verb rune) { crdb.FormatError(e, s, verb) }

// readErr wraps a read error (a read has no outcome to lose). It matches claims.ErrClaimStore, so that a
// caller (the CLI's exit status) can tell "the store could not be read, nothing was written" from a
// failed request.
func readErr(err error, what string) error {
	return errmark.Mark(crdb.Wrapf(err, "etcdstore: %s", crdb.Safe(what)), claims.ErrClaimStore)
}
