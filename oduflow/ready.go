package oduflow

import (
	"context"

	"github.com/cockroachdb/errors"

	"github.com/oduflow/oduflow-go/internal/errmark"
)

// Ready reports whether a Start of a new request would be admitted now, by the check Start makes before
// it writes a claim: the master answers its request channel (a cached clear-channel ping), the
// credentials load and the event-bus subscription is live. Nothing is published or written. It returns
// nil when ready, an error matching ErrClosed once Close has begun, else one matching ErrNotReady and its
// cause (see Start). A service's readiness probe calls it.
func (d *Dispatcher) Ready(ctx context.Context) (err error) {
	defer errmark.Boundary(&err)
	if d.isClosing() {
		return errors.Wrap(ErrClosed, "oduflow: not admitting new requests")
	}
	return d.ready(ctx)
}
