package cli

import (
	"context"
	"errors"

	"github.com/oduflow/oduflow-go/examples/internal/oduflowenv"
	"github.com/oduflow/oduflow-go/oduflow"
	"github.com/oduflow/oduflow-go/oduflow/claims"
)

// requestKey is the stored id of REQUEST_ID on minion. oduflowctl stores its own requests under the id
// itself; the HTTP controller stores a caller's id under oduflowenv.ScopedRequestID(minion, id). So that
// at-most-once holds per (client, request) whichever tool started it, an id with no claim of its own whose
// scoped key has a claim of this client is that request: start answers from it (never a second run),
// status and resume follow it. Anything else (a claim of the id, one bound elsewhere, a store error) is
// the id itself, answered by the dispatcher as before.
func requestKey(ctx context.Context, d *oduflow.Dispatcher, minion, request string) string {
	if _, err := d.Lookup(ctx, minion, request); !errors.Is(err, claims.ErrNoClaim) {
		return request
	}
	scoped := oduflowenv.ScopedRequestID(minion, request)
	if _, err := d.Lookup(ctx, minion, scoped); err == nil {
		return scoped
	}
	return request
}

// asCaller is r told with the caller's request id when it was read under the scoped key.
func asCaller(r oduflow.Response, key, request string) oduflow.Response {
	if r.RequestID == key {
		r.RequestID = request
	}
	return r
}
