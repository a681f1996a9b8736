package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"testing"

	"github.com/oduflow/oduflow-go/internal/errmark"
	"github.com/oduflow/oduflow-go/oduflow"
	"github.com/oduflow/oduflow-go/oduflow/catalog"
	"github.com/oduflow/oduflow-go/oduflow/claims"
	"github.com/oduflow/oduflow-go/receipt"
	"github.com/oduflow/oduflow-go/salt"
)

func TestExitFor(t *testing.T) {
	notReady := func(cause error) error {
		return errmark.Mark(fmt.Errorf("oduflow: not ready: %w", cause), oduflow.ErrNotReady, cause)
	}
	for _, tc := range []struct {
		name string
		err  error
		want int
	}{
		{"nil", nil, ExitOK},
		{"help", flag.ErrHelp, ExitOK},
		{"silent", silentExit(ExitRefused), ExitRefused},
		{"usage", usagef("x"), ExitUsage},
		{"config", configf(errors.New("no such dir"), "claim store"), ExitUsage},
		{"invalid input", fmt.Errorf("wrapped: %w", claims.ErrInvalidInput), ExitUsage},
		{"profile mismatch", fmt.Errorf("bound to profile configure: %w", oduflow.ErrMismatch), ExitUsage},
		{"minion mismatch", fmt.Errorf("bound to minion client-x: %w", oduflow.ErrMismatch), ExitUsage},
		{"bad request id", receipt.ErrInvalidID, ExitUsage},
		{"catalog invalid input (a refused custom source)", catalog.ErrInvalid, ExitUsage},
		{"key file missing (not ready)", notReady(salt.ErrKeyFile), ExitUsage},
		// The salt package's own shape of a missing key file (keyfile_unix.go: the open error marked, then wrapped).
		{"key file (the salt package's mark, wrapped)", fmt.Errorf("opening /k: %w",
			errmark.Mark(errors.New("open: no such file"), salt.ErrKeyFile)), ExitUsage},
		{"wrong password (not ready)", notReady(salt.ErrAuthentication), ExitRefused},
		{"authorization", fmt.Errorf("publish: %w", salt.ErrAuthorization), ExitRefused},
		{"master error authentication", &salt.MasterError{Name: "EauthAuthenticationError"}, ExitRefused},
		{"event bus (not ready)", notReady(oduflow.ErrNotReady), ExitUnreachable},
		{"master unreachable (not ready)", notReady(oduflow.ErrNotReady), ExitUnreachable},
		{"claim store", errmark.Mark(errors.New("EIO"), claims.ErrClaimStore), ExitUnreachable},
		{"not sent", errmark.Mark(errors.New("dial"), salt.ErrNotSent), ExitUnreachable},
		{"corrupt claim (the library's own decode error)", new(claims.Claim).UnmarshalBinary([]byte("{")), ExitDamaged},
		{"corrupt catalog record", fmt.Errorf("x: %w", catalog.ErrCorrupt), ExitDamaged},
		{"outcome unknown", fmt.Errorf("x: %w", salt.ErrOutcomeUnknown), ExitUnknown},
		{"uncertain custom", oduflow.ErrUncertain, ExitUnknown},
		{"interrupted", context.Canceled, ExitUnknown},
		{"worker launch", fmt.Errorf("launch r: %w", oduflow.ErrWorkerLaunch), ExitFailed},
		{"anything else", errors.New("boom"), ExitFailed},
	} {
		if got := exitFor(tc.err); got != tc.want {
			t.Errorf("%s: exitFor(%v) = %d, want %d", tc.name, tc.err, got, tc.want)
		}
	}
}

func TestStatusCode(t *testing.T) {
	for _, tc := range []struct {
		st       receipt.Status
		code     claims.ErrorCode
		timedOut bool
		want     int
	}{
		{receipt.StatusSucceeded, "", false, ExitOK},
		{receipt.StatusRunning, "", false, ExitOK},
		{receipt.StatusNotStarted, "", false, ExitOK},
		{receipt.StatusRunning, "", true, ExitStillRunning},
		{receipt.StatusFailed, "", false, ExitFailed},
		{receipt.StatusFailed, claims.CodeCapability, false, ExitFailed},
		{receipt.StatusFailed, claims.CodeAuthentication, false, ExitRefused},
		{receipt.StatusFailed, claims.CodeAuthorization, false, ExitRefused},
		{receipt.StatusUnknown, claims.CodeWorkerLost, false, ExitUnknown},
	} {
		if got := statusCode(tc.st, tc.code, tc.timedOut); got != tc.want {
			t.Errorf("statusCode(%s, %q, %v) = %d, want %d", tc.st, tc.code, tc.timedOut, got, tc.want)
		}
	}
	if err := exitAfter(nil, context.DeadlineExceeded, receipt.StatusRunning, ""); exitFor(err) != ExitStillRunning {
		t.Errorf("wait timed out while running: %v", err)
	}
}

func TestClaimsFlag(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		claims, want string
		ok           bool
	}{
		{"", dir, true},
		{"file:" + dir + "/c", dir + "/c", true},
		{dir + "/p", dir + "/p", true},
		{"etcd://127.0.0.1:2379", "", false},
		{"s3://bucket", "", false},
		{"file:", "", false},
	} {
		g := &globals{stateDir: dir, claims: tc.claims}
		got, err := g.claimDir()
		if (err == nil) != tc.ok || (tc.ok && got != tc.want) {
			t.Errorf("--claims %q: %q %v", tc.claims, got, err)
		}
		if !tc.ok && exitFor(err) != ExitUsage {
			t.Errorf("--claims %q: exit %d", tc.claims, exitFor(err))
		}
	}
}
