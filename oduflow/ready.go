package oduflow

import (
	"context"
	"time"

	"github.com/cockroachdb/errors"

	"github.com/oduflow/oduflow-go/internal/errmark"
	"github.com/oduflow/oduflow-go/salt"
)

// Readiness sentinels. A Start (or CustomStart) of a request that has no claim yet first checks that the
// dispatcher can dispatch at all; when it cannot, it writes nothing and returns an error matching
// ErrNotReady and its cause: the event bus or the master unreachable, salt.ErrKeyFile, salt.ErrAuthentication
// or salt.ErrAuthorization (stdlib errors.Is sees them). The same request id can be started once the
// configuration is fixed.
var (
	// ErrNotReady: the dispatcher cannot dispatch now; nothing was written (no claim, no snapshot).
	ErrNotReady = errors.New("oduflow: not ready to dispatch; nothing written")
	// ErrClaimStore: the claim store could not be read or written.
	ErrClaimStore = errors.New("oduflow: claim store unavailable")
)

// The causes of ErrNotReady the dispatcher itself names (each is ErrNotReady for errors.Is).
var (
	// errEventBus: the master event bus cannot be subscribed to.
	errEventBus = errmark.Mark(errors.New("oduflow: event bus unavailable"), ErrNotReady)
	// errMasterUnreachable: the master did not answer the credential exchange (mk_token).
	errMasterUnreachable = errmark.Mark(errors.New("oduflow: master unreachable"), ErrNotReady)
)

// credentialChecker is implemented by a Publisher that can prove its credentials usable without
// publishing anything (*salt.Client: the user key file is read and validated; an eauth token source
// returns its cached token, or exchanges the password once with mk_token). A Publisher without it is
// trusted as is.
type credentialChecker interface {
	CheckAuth(ctx context.Context) error
}

// readyTimeout bounds the readiness check when nothing is held yet (one mk_token, one subscription).
const readyTimeout = 15 * time.Second

// ready checks, from state the dispatcher holds, that it can dispatch: the credentials load (a cached
// token or a key file read: no round trip) and the shared event-bus subscription is live (connected once,
// then held). It never publishes: a test publish would put an eauth password on the bus.
func (d *Dispatcher) ready(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	if cc, ok := d.pub.(credentialChecker); ok {
		if err := cc.CheckAuth(ctx); err != nil {
			return d.notReady(ctx, err)
		}
	}
	if err := d.hub.ensure(ctx); err != nil {
		return d.notReady(ctx, errmark.Mark(err, errEventBus))
	}
	return nil
}

// notReady marks err with ErrNotReady and the sentinel naming its cause. A cancelled caller gets its
// context's error instead (the configuration may be fine).
func (d *Dispatcher) notReady(ctx context.Context, err error) error {
	if errors.Is(err, errClosed) {
		return err
	}
	if errors.Is(ctx.Err(), context.Canceled) {
		return errors.Wrap(ctx.Err(), "oduflow: readiness check")
	}
	cause := readinessCause(err)
	d.log.Warn("not ready to dispatch; nothing written", "cause", cause.Error())
	return errmark.Mark(errors.Wrap(err, "oduflow: not ready to dispatch (nothing written)"), ErrNotReady, cause)
}

// readinessCause names what failed (cockroachdb's Is sees both its own marks and errmark's).
func readinessCause(err error) error {
	for _, s := range []error{errEventBus, salt.ErrKeyFile, salt.ErrAuthentication, salt.ErrAuthorization} {
		if errors.Is(err, s) {
			return s
		}
	}
	return errMasterUnreachable
}

// callErrorCode names the cause of a failed read-only preflight call (capabilities) for the claim: the
// credentials, the event bus or the master's transport; codeCapability when the minion did not answer
// protocol 1.
func callErrorCode(err error) string {
	switch {
	case errors.Is(err, errEventBus):
		return codeEventBus
	case errors.Is(err, salt.ErrAuthentication):
		return codeAuthentication
	case errors.Is(err, salt.ErrAuthorization):
		return codeAuthorization
	case errors.Is(err, salt.ErrNotSent):
		return codeNotSent
	}
	return codeCapability
}

// claimStoreErr marks a claim-store failure other than a damaged claim with ErrClaimStore.
func claimStoreErr(err error) error {
	if err == nil || errors.Is(err, ErrCorruptClaim) || errors.Is(err, context.Canceled) {
		return err
	}
	return errmark.Mark(err, ErrClaimStore)
}
