package otel_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/oduflow/oduflow-go/oduflow"
	"github.com/oduflow/oduflow-go/receipt"
)

// runRequestEvents calls h with the events of one dispatched configure request per iteration, in the
// order a worker emits them.
func runRequestEvents(b *testing.B, h oduflow.Hooks) {
	if h.Step == nil { // an adapter without step events: the dispatcher skips a nil hook
		h.Step = func(context.Context, oduflow.RequestRef, string) {}
	}
	ctx := context.Background()
	minion := "client-" + uuid.NewString()
	b.ReportAllocs()
	for b.Loop() {
		ref := oduflow.RequestRef{Minion: minion, RequestID: uuid.NewString(), Profile: receipt.ProfileConfigure,
			JID: "20261202003000000000"}
		h.Started(ctx, ref, true)
		h.Observe(ctx, ref, "start", time.Millisecond)
		h.Step(ctx, ref, "claimed")
		h.Published(ctx, oduflow.RequestRef{}, "oduflow_job.capabilities", "ok")
		h.Observe(ctx, ref, "capabilities", time.Millisecond)
		h.Step(ctx, ref, "lease")
		h.Step(ctx, ref, "dispatch_recorded")
		h.Step(ctx, ref, "publish_sending")
		h.Published(ctx, ref, "oduflow_job.run", "ok")
		h.Observe(ctx, ref, "publish", time.Millisecond)
		h.Step(ctx, ref, "publish_replied")
		h.Published(ctx, ref, "oduflow_job.attest", "ok")
		h.Observe(ctx, ref, "proof", time.Millisecond)
		h.Step(ctx, ref, "returned")
		h.Outcome(ctx, ref, receipt.StatusSucceeded, "")
		h.Step(ctx, ref, "committed")
		h.Observe(ctx, ref, "dispatch_to_final", 10*time.Millisecond)
		h.Observe(ctx, ref, "status", time.Millisecond)
	}
}
