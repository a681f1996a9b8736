package service

import (
	"context"
	"errors"
	"net/http"
	"regexp"

	"github.com/oduflow/oduflow-go/examples/internal/oduflowenv"
	"github.com/oduflow/oduflow-go/oduflow"
	"github.com/oduflow/oduflow-go/oduflow/catalog"
	"github.com/oduflow/oduflow-go/oduflow/claims"
	"github.com/oduflow/oduflow-go/oduflow/etcdstore"
	"github.com/oduflow/oduflow-go/profiles"
	"github.com/oduflow/oduflow-go/receipt"
	"github.com/oduflow/oduflow-go/salt"
)

// apiError is the JSON body of every error answer: the one-line message, oduflowctl's exit status and its
// name (the same decision a script makes from the CLI), and the library error it stands for.
type apiError struct {
	Error      string `json:"error"`
	Code       string `json:"code"`
	ExitStatus int    `json:"exit_status"`
	Reason     string `json:"reason"`
}

// Exit statuses of the service's own refusals: authentication and authorization refusals wrote nothing
// (oduflowctl's usage status); a principal over its bound may retry (unreachable: nothing written, later).
const (
	exitNothingWritten = oduflowenv.ExitUsage
	exitRetry          = oduflowenv.ExitUnreachable
)

// errorClass is one row of the mapping from an error to its answer.
type errorClass struct {
	match  func(error) bool
	http   int
	exit   int
	reason string
}

// is matches target with the standard library's errors.Is, which is enough: the library marks its
// sentinels so that it sees them (internal/errmark), and its cockroachdb wrappers unwrap to their causes.
func is(target error) func(error) bool {
	return func(err error) bool { return errors.Is(err, target) }
}

// errorClasses: the most specific proof first (a closing dispatcher, a damaged store), the vaguest last;
// the order mirrors oduflowctl's exit statuses.
var errorClasses = []errorClass{
	{is(oduflow.ErrClosed), http.StatusServiceUnavailable, oduflowenv.ExitUnreachable, "closed"},
	{is(claims.ErrCorruptClaim), http.StatusInternalServerError, oduflowenv.ExitDamaged, "corrupt_claim"},
	{is(catalog.ErrCorrupt), http.StatusInternalServerError, oduflowenv.ExitDamaged, "corrupt_catalog"},
	{func(err error) bool {
		return is(oduflow.ErrNotReady)(err) && (is(salt.ErrAuthentication)(err) || is(salt.ErrAuthorization)(err))
	}, http.StatusServiceUnavailable, oduflowenv.ExitRefused, "not_ready"},
	{is(oduflow.ErrNotReady), http.StatusServiceUnavailable, oduflowenv.ExitUnreachable, "not_ready"},
	{is(salt.ErrKeyFile), http.StatusInternalServerError, oduflowenv.ExitUsage, "key_file"},
	{is(salt.ErrAuthentication), http.StatusBadGateway, oduflowenv.ExitRefused, "authentication"},
	{is(salt.ErrAuthorization), http.StatusBadGateway, oduflowenv.ExitRefused, "authorization"},
	{is(oduflow.ErrNotAssigned), http.StatusConflict, oduflowenv.ExitUsage, "not_assigned"},
	{is(oduflow.ErrInitialConfigurationMissing), http.StatusConflict, oduflowenv.ExitUsage, "initial_configuration_missing"},
	{is(oduflow.ErrUncertain), http.StatusConflict, oduflowenv.ExitUnknown, "uncertain_execution"},
	{is(oduflow.ErrNeedsConfirmation), http.StatusConflict, oduflowenv.ExitUsage, "failure_not_confirmed"},
	{is(oduflow.ErrApplyAgainWithoutTerminal), http.StatusConflict, oduflowenv.ExitUsage, "no_terminal_result"},
	{is(catalog.ErrNotFound), http.StatusNotFound, oduflowenv.ExitUsage, "not_found"},
	{is(catalog.ErrExists), http.StatusConflict, oduflowenv.ExitUsage, "exists"},
	{is(catalog.ErrInvalid), http.StatusBadRequest, oduflowenv.ExitUsage, "invalid_input"},
	{is(claims.ErrInvalidInput), http.StatusBadRequest, oduflowenv.ExitUsage, "invalid_input"},
	{is(receipt.ErrInvalidID), http.StatusBadRequest, oduflowenv.ExitUsage, "invalid_input"},
	{is(receipt.ErrUnknownProfile), http.StatusBadRequest, oduflowenv.ExitUsage, "invalid_input"},
	{is(claims.ErrNoClaim), http.StatusNotFound, oduflowenv.ExitUsage, "no_claim"},
	{is(oduflow.ErrMismatch), http.StatusConflict, oduflowenv.ExitUsage, "mismatch"},
	{is(oduflow.ErrNotUnknown), http.StatusConflict, oduflowenv.ExitFailed, "not_unknown"},
	{is(claims.ErrConflict), http.StatusConflict, oduflowenv.ExitFailed, "conflict"},
	{is(claims.ErrClaimExists), http.StatusConflict, oduflowenv.ExitFailed, "conflict"},
	{is(claims.ErrLeaseBusy), http.StatusConflict, oduflowenv.ExitFailed, "lease_busy"},
	{is(claims.ErrLeaseLost), http.StatusConflict, oduflowenv.ExitFailed, "lease_lost"},
	{is(etcdstore.ErrOutcomeUnknown), http.StatusInternalServerError, oduflowenv.ExitUnknown, "outcome_unknown"},
	{is(claims.ErrClaimStore), http.StatusServiceUnavailable, oduflowenv.ExitUnreachable, "claim_store"},
	{is(salt.ErrNotSent), http.StatusServiceUnavailable, oduflowenv.ExitUnreachable, "not_sent"},
	{is(oduflow.ErrUnresolved), http.StatusConflict, oduflowenv.ExitUnknown, "unresolved"},
	{is(oduflow.ErrNotFenced), http.StatusConflict, oduflowenv.ExitUnknown, "not_fenced"},
	{is(salt.ErrOutcomeUnknown), http.StatusBadGateway, oduflowenv.ExitUnknown, "outcome_unknown"},
	{is(context.DeadlineExceeded), http.StatusGatewayTimeout, oduflowenv.ExitUnknown, "timeout"},
	{is(context.Canceled), http.StatusServiceUnavailable, oduflowenv.ExitUnknown, "canceled"},
	{is(oduflow.ErrWorkerLaunch), http.StatusInternalServerError, oduflowenv.ExitFailed, "worker_launch"},
}

// classify maps err to its answer: a configuration error of the shared settings by its kind, a body too
// large, then the library's errors (errorClasses); anything else is 500 failed.
func classify(err error) (int, apiError) {
	msg := scrubPaths(oduflowenv.OneLine(err.Error()))
	var se *profiles.CustomError
	if errors.As(err, &se) {
		return http.StatusUnprocessableEntity, body(msg, oduflowenv.ExitUsage, "invalid_source")
	}
	var ce *oduflowenv.Error
	if errors.As(err, &ce) {
		switch {
		case errors.Is(ce.Kind, oduflowenv.ErrUnreachable):
			return http.StatusServiceUnavailable, body(msg, oduflowenv.ExitUnreachable, "unreachable")
		case errors.Is(ce.Kind, oduflowenv.ErrRefused):
			return http.StatusBadGateway, body(msg, oduflowenv.ExitRefused, "refused")
		}
		return http.StatusBadRequest, body(msg, oduflowenv.ExitUsage, "invalid_input")
	}
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		return http.StatusRequestEntityTooLarge, body(msg, oduflowenv.ExitUsage, "body_too_large")
	}
	for _, c := range errorClasses {
		if c.match(err) {
			return c.http, body(msg, c.exit, c.reason)
		}
	}
	return http.StatusInternalServerError, body(msg, oduflowenv.ExitFailed, "internal")
}

func body(msg string, exit int, reason string) apiError {
	return apiError{Error: msg, Code: oduflowenv.ExitName(exit), ExitStatus: exit, Reason: reason}
}

// absPath is an absolute file path of two segments or more after a space, a quote, '(' or '=' (an
// error text's claim or catalog file): answers name no file.
var absPath = regexp.MustCompile(`(^|[\s"'(=])(/[^\s"':,)]+){2,}`)

// socketURL is a unix socket address (the event bus: unix:///var/run/salt/master/master_event_pub.ipc).
var socketURL = regexp.MustCompile(`unix://[^\s"',)]*`)

// fileName is a record's file name in an error text (a catalog's def.<id>.json, a lock, a temporary
// file): relative names say as much about the store's layout as paths.
var fileName = regexp.MustCompile(`[A-Za-z0-9_.<>-]*\.(json|lock|tmp|pem|key)\b`)

// scrubPaths replaces the file paths and unix socket addresses in msg by <path> and the file names by
// <file>.
func scrubPaths(msg string) string {
	msg = absPath.ReplaceAllString(socketURL.ReplaceAllString(msg, "unix://<path>"), "$1<path>")
	return fileName.ReplaceAllString(msg, "<file>")
}
