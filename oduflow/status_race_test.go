package oduflow

import (
	"context"
	"testing"

	"github.com/google/uuid"
	"github.com/oduflow/oduflow-go/oduflow/claims"
	"github.com/oduflow/oduflow-go/receipt"
)

// TestStatusOfAClaimCommittedBetweenItsReads: Status reads a claim, then its lock. A worker that commits
// the final status and releases its lock between the two reads left a dispatched claim with a free lock,
// which read unknown for a request that had just succeeded (seen in CI as a custom request "final:
// unknown 0/0"; in a worker's preflight the same reading quarantined a client for nothing). The lock
// found free is now followed by a second read of the claim, which is final.
func TestStatusOfAClaimCommittedBetweenItsReads(t *testing.T) {
	t.Parallel()
	e := startSim(t)
	m := e.addMinion()
	d := e.dispatcher()
	req := uuid.NewString()
	mustStart(t, d, receipt.ProfileConfigure, m.ID(), req)
	if got := waitFinal(t, d, receipt.ProfileConfigure, m.ID(), req); got.Status != receipt.StatusSucceeded {
		t.Fatalf("run: %+v", got)
	}
	waitLockFree(t, d, req) // the worker released its lock after its commit
	final := mustClaim(t, d, req)
	// what the first read saw: dispatched, before the worker committed
	stale := final.Clone()
	stale.Phase, stale.Status, stale.Passed, stale.Total = claims.PhaseDispatched, "", 0, 0
	c, st, err := d.computeStatus(context.Background(), stale)
	if err != nil || st != receipt.StatusSucceeded || !c.Phase.Final() || c.Passed != final.Passed {
		t.Fatalf("status of a claim committed between its reads: %s %+v %v, want succeeded", st, c, err)
	}
	r := responseFor(c, st)
	if r.Status != receipt.StatusSucceeded || r.Total != final.Total {
		t.Fatalf("response %+v", r)
	}
}

// staleFirstRead is a store whose GetWithLiveness answers as a file store does when the worker commits
// and releases between its two reads: the claim as it was, the lock as it is now (free).
type staleFirstRead struct {
	claims.WindowedStore
	stale *claims.Claim
}

func (s staleFirstRead) GetWithLiveness(ctx context.Context, requestID string) (*claims.Claim, claims.Liveness, error) {
	lv, err := s.Liveness(ctx, s.stale)
	return s.stale.Clone(), lv, err
}

// TestStatusSettlesAStaleFirstRead: the same interleaving through Status, whose store reads the claim
// and then the lock (the file store's GetWithLiveness).
func TestStatusSettlesAStaleFirstRead(t *testing.T) {
	t.Parallel()
	e := startSim(t)
	m := e.addMinion()
	d := e.dispatcher()
	req := uuid.NewString()
	mustStart(t, d, receipt.ProfileConfigure, m.ID(), req)
	waitFinal(t, d, receipt.ProfileConfigure, m.ID(), req)
	waitLockFree(t, d, req)
	stale := mustClaim(t, d, req).Clone()
	stale.Phase, stale.Status, stale.Passed, stale.Total = claims.PhaseDispatched, "", 0, 0
	d.windows = staleFirstRead{WindowedStore: d.windows, stale: stale}
	r, err := d.Status(context.Background(), m.ID(), req, receipt.ProfileConfigure)
	if err != nil || r.Status != receipt.StatusSucceeded {
		t.Fatalf("Status after a stale first read: %+v %v, want succeeded", r, err)
	}
}
