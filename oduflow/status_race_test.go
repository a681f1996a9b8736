package oduflow

import (
	"context"
	"testing"

	"github.com/oduflow/oduflow-go/oduflow/claims"
	"github.com/oduflow/oduflow-go/oduflow/oduflowtest/fakeminion"
	"github.com/oduflow/oduflow-go/receipt"
)

// TestStatusOfAClaimCommittedBetweenItsReads: Status reads a claim, then its lock. A worker that commits
// the final status and releases its lock between the two reads left a dispatched claim with a free lock,
// which read unknown for a request that had just succeeded (seen in CI as a custom request "final:
// unknown 0/0"; in a worker's preflight the same reading quarantined a client for nothing). The lock
// found free is now followed by a second read of the claim, which is final.
func TestStatusOfAClaimCommittedBetweenItsReads(t *testing.T) {
	t.Parallel()
	d, _, final, stale := committedBetweenReads(t)
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
	d, m, final, stale := committedBetweenReads(t)
	d.windows = staleFirstRead{WindowedStore: d.windows, stale: stale}
	r, err := d.Status(context.Background(), m.ID(), final.RequestID, receipt.ProfileConfigure)
	if err != nil || r.Status != receipt.StatusSucceeded {
		t.Fatalf("Status after a stale first read: %+v %v, want succeeded", r, err)
	}
}

// committedBetweenReads runs one request to success with its lock released, and returns its final claim
// and the claim as a read before the worker's commit saw it (dispatched).
func committedBetweenReads(t *testing.T) (*Dispatcher, *fakeminion.Model, *claims.Claim, *claims.Claim) {
	t.Helper()
	e := startSim(t)
	m := e.addMinion()
	d := e.dispatcher()
	got := runOne(t, d, m.ID())
	if got.Status != receipt.StatusSucceeded {
		t.Fatalf("run: %+v", got)
	}
	waitLockFree(t, d, got.RequestID) // the worker released its lock after its commit
	final := mustClaim(t, d, got.RequestID)
	stale := final.Clone()
	stale.Phase, stale.Status, stale.Passed, stale.Total = claims.PhaseDispatched, "", 0, 0
	return d, m, final, stale
}
