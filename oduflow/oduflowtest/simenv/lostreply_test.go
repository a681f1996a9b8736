package simenv_test

import (
	"context"
	"testing"
	"time"

	"github.com/oduflow/oduflow-go/oduflow/claims"
	"github.com/oduflow/oduflow-go/oduflow/oduflowtest/simenv"
	"github.com/oduflow/oduflow-go/receipt"
	"github.com/oduflow/oduflow-go/salt"
)

// TestLostPublishReply is the lost-reply test a newcomer copies: the master publishes oduflow_job.run
// but its reply never reaches the dispatcher. The request is unknown at once (the run may have gone out,
// and the client is quarantined), it is never published again, and the minion's verified receipt, read
// from its return, turns it into succeeded. A 300 ms request timeout keeps it to about a second, not the
// 60 s default.
func TestLostPublishReply(t *testing.T) {
	start := time.Now()
	env := simenv.Start(t)
	minion := env.AddMinion() // configure succeeds 3/3
	d := env.DispatcherOn(env.Client(salt.WithRequestTimeout(300 * time.Millisecond)))

	env.Master().DropNextReply("oduflow_job.run") // not "publish": the preflight capabilities call is one too
	request := receipt.NewRequestID()
	if _, err := d.Start(context.Background(), minion.ID(), request, receipt.ProfileConfigure); err != nil {
		t.Fatal(err)
	}
	if r := simenv.WaitFinal(t, d, receipt.ProfileConfigure, minion.ID(), request); r.Status != receipt.StatusUnknown ||
		r.ErrorCode != claims.CodeOutcomeUnknown {
		t.Fatalf("after the lost reply: %+v", r) // final for now, not verified: WaitFinal stops at unknown
	}
	r := simenv.WaitVerified(t, d, receipt.ProfileConfigure, minion.ID(), request)
	if r.Status != receipt.StatusSucceeded || r.Passed != 3 {
		t.Fatalf("verified: %+v", r)
	}
	if n := env.Master().PublicationCount("oduflow_job.run", ""); n != 1 {
		t.Fatalf("oduflow_job.run published %d times, want exactly once", n)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("took %v: a lost-reply test must end in under 5 s", took)
	}
}
