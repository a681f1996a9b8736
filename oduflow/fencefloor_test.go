package oduflow

import (
	"context"
	"testing"

	"github.com/oduflow/oduflow-go/oduflow/claims"
	"github.com/oduflow/oduflow-go/oduflow/filestore"
	"github.com/oduflow/oduflow-go/oduflow/oduflowtest/fakeminion"
	"github.com/oduflow/oduflow-go/receipt"
)

// TestMinionMarkAheadOfTheStore: a minion fenced far above this store's counter (another claim store
// dispatched to it, or this one was restored from a backup) runs the next request: the worker reads the
// minion's mark at preflight and the intent issues a token above it. Before floors every run of such a
// client was refused as fenced until the store's counter passed the mark.
func TestMinionMarkAheadOfTheStore(t *testing.T) {
	t.Parallel()
	e := startSim(t)
	const mark = 1_000_000
	m := e.addMinion(fakeminion.WithFenceMark(mark))
	d := e.dispatcher()
	for i := range 3 {
		req := receipt.NewRequestID()
		mustStart(t, d, receipt.ProfileConfigure, m.ID(), req)
		got := waitFinal(t, d, receipt.ProfileConfigure, m.ID(), req)
		c := mustClaim(t, d, req)
		if got.Status != receipt.StatusSucceeded || c.FenceToken <= mark || c.Evidence != evidenceReceipt {
			t.Fatalf("request %d on a minion with mark %d: %+v, token %d, evidence %s", i, mark, got, c.FenceToken, c.Evidence)
		}
		if m.FenceMark() != int64(c.FenceToken) {
			t.Fatalf("minion mark %d after the run of token %d", m.FenceMark(), c.FenceToken)
		}
	}
	if m.Runs() != 3 || e.runs() != 3 {
		t.Fatalf("runs: minion %d, published %d; want 3", m.Runs(), e.runs())
	}
}

// floorIgnoringStore is a claim store that breaks the floor clause of the contract: it drops the floor
// the worker passes at the intent.
type floorIgnoringStore struct{ *filestore.Store }

func (s floorIgnoringStore) CompareAndSwapHeld(ctx context.Context, next *claims.Claim, held ...claims.Lease) (*claims.Claim, error) {
	n := next.Clone()
	n.FenceToken = 0
	return s.Store.CompareAndSwapHeld(ctx, n, held...)
}

// TestStoreIgnoringTheFloorPublishesNothing: a token not above the minion's mark would only be refused
// by the minion; the worker fails the request typed (fence_behind) before publishing anything.
func TestStoreIgnoringTheFloorPublishesNothing(t *testing.T) {
	t.Parallel()
	e := startSim(t)
	m := e.addMinion(fakeminion.WithFenceMark(50))
	fs, err := filestore.Open(e.dir, testWindows())
	if err != nil {
		t.Fatal(err)
	}
	d := e.dispatcher(WithClaimStore(floorIgnoringStore{fs}))
	req := receipt.NewRequestID()
	mustStart(t, d, receipt.ProfileConfigure, m.ID(), req)
	got := waitFinal(t, d, receipt.ProfileConfigure, m.ID(), req)
	c := mustClaim(t, d, req)
	if got.Status != receipt.StatusFailed || got.ErrorCode != claims.CodeFenceBehind || c.Evidence != evidencePreflight ||
		c.Quarantining() {
		t.Fatalf("store behind the minion's mark: %+v, claim %+v", got, c)
	}
	if e.runs() != 0 || m.Runs() != 0 || m.FenceMark() != 50 {
		t.Fatalf("published %d, minion runs %d, mark %d; want nothing published", e.runs(), m.Runs(), m.FenceMark())
	}
}

// TestF6ExhaustedFenceCounter: a minion whose mark is at MaxFenceToken can take no token above it. Ping
// says not ready with the reason; a start fails 0/1 fence_exhausted at preflight, publishes nothing and
// quarantines nothing (a second start fails the same way, not quarantined). Before: ping said ready and
// the request stayed claimed with no code, read unknown after the launch window, quarantining the client.
func TestF6ExhaustedFenceCounter(t *testing.T) {
	t.Parallel()
	e := startSim(t)
	m := e.addMinion(fakeminion.WithFenceMark(int64(claims.MaxFenceToken)))
	d := e.dispatcher()
	rd, err := d.Ping(context.Background(), m.ID())
	if err != nil || rd.Ready() || rd.Fencing || rd.FencingError == "" {
		t.Fatalf("ping of an exhausted counter: %+v %v", rd, err)
	}
	for range 2 {
		req := receipt.NewRequestID()
		mustStart(t, d, receipt.ProfileConfigure, m.ID(), req)
		got := waitFinal(t, d, receipt.ProfileConfigure, m.ID(), req)
		c := mustClaim(t, d, req)
		if got.Status != receipt.StatusFailed || got.ErrorCode != claims.CodeFenceExhausted || got.Passed != 0 || got.Total != 1 ||
			c.Evidence != evidencePreflight || c.Quarantining() {
			t.Fatalf("start on an exhausted counter: %+v, claim %+v", got, c)
		}
	}
	if e.runs() != 0 || m.Runs() != 0 {
		t.Fatalf("published %d, minion runs %d; want nothing published", e.runs(), m.Runs())
	}
}
