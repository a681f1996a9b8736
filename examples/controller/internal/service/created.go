package service

import (
	"context"
	"sync/atomic"

	"github.com/oduflow/oduflow-go/oduflow"
)

// createdKey marks a start call's context with the flag its Started hook sets: the Dispatcher reports
// through Hooks.Started whether this very call created the claim, which is the 201/200 of the answer
// (a lookup before Start would race with a concurrent POST of the same request id).
type createdKey struct{}

// withCreatedFlag returns ctx carrying a flag that Started sets when the call creates the claim.
func withCreatedFlag(ctx context.Context) (context.Context, *atomic.Bool) {
	f := new(atomic.Bool)
	return context.WithValue(ctx, createdKey{}, f), f
}

// withCreated chains h.Started with the flag of withCreatedFlag.
func withCreated(h oduflow.Hooks) oduflow.Hooks {
	next := h.Started
	h.Started = func(ctx context.Context, req oduflow.RequestRef, created bool) {
		if f, ok := ctx.Value(createdKey{}).(*atomic.Bool); ok && created {
			f.Store(true)
		}
		if next != nil {
			next(ctx, req, created)
		}
	}
	return h
}
