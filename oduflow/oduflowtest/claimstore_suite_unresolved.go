package oduflowtest

import (
	"testing"
	"time"

	"github.com/oduflow/oduflow-go/oduflow/claims"
	"github.com/oduflow/oduflow-go/receipt"
)

// testListUnresolved: a store that implements claims.UnresolvedLister lists, through every handle, every
// unresolved claim of the client at each step of the transitions the dispatcher makes (created,
// dispatching, dispatched, terminal unknown, resolved by a receipt or an assertion, and terminal unknown
// replaced by a receipt), and nothing of other clients. Resolved claims it still returns must be current
// (callers filter them with Unresolved). Skipped for a store without the index.
func (s *suite) testListUnresolved(t *testing.T) {
	loc := s.backend(t)
	a, b := s.open(t, loc), s.open(t, loc)
	if _, ok := a.(claims.UnresolvedLister); !ok {
		t.Skip("oduflowtest: the store has no unresolved index (claims.UnresolvedLister)")
	}
	ctx := testContext(t)
	c1, c2, other := NewClaim(), NewClaim(), NewClaim()
	c2.MinionID = c1.MinionID
	cur := map[string]*claims.Claim{}
	for _, c := range []*claims.Claim{c1, c2, other} {
		cur[c.RequestID] = mustCreate(t, a, c)
	}
	want := func(step string, ids ...string) {
		t.Helper()
		for i, h := range []Store{a, b} {
			got, err := h.(claims.UnresolvedLister).ListUnresolved(ctx, c1.MinionID)
			if err != nil {
				t.Fatalf("%s: handle %d: ListUnresolved: %v", step, i, err)
			}
			open := map[string]bool{}
			for _, c := range got {
				if c.MinionID != c1.MinionID {
					t.Fatalf("%s: handle %d: a claim of another client listed", step, i)
				}
				if c.Unresolved() {
					open[c.RequestID] = true
				} else if now := cur[c.RequestID]; now == nil || now.Generation != c.Generation {
					t.Fatalf("%s: handle %d: a resolved claim listed as it no longer is", step, i)
				}
			}
			if len(open) != len(ids) {
				t.Fatalf("%s: handle %d: %d unresolved claims listed, want %d", step, i, len(open), len(ids))
			}
			for _, id := range ids {
				if !open[id] {
					t.Fatalf("%s: handle %d: unresolved claim %s missing", step, i, id)
				}
			}
		}
	}
	swap := func(c *claims.Claim, change func(*claims.Claim)) {
		t.Helper()
		next := clone(cur[c.RequestID])
		change(next)
		out, err := a.CompareAndSwap(ctx, next)
		if err != nil {
			t.Fatalf("CompareAndSwap: %v", err)
		}
		cur[c.RequestID] = out
	}
	now := time.Now().UTC()
	want("created", c1.RequestID, c2.RequestID)
	swap(c1, func(c *claims.Claim) { c.Phase, c.DispatchedAt = claims.PhaseDispatching, &now })
	swap(c1, func(c *claims.Claim) { c.Phase = claims.PhaseDispatched })
	swap(c2, func(c *claims.Claim) {
		c.Phase, c.Status, c.ErrorCode, c.Evidence, c.FinishedAt = claims.PhaseTerminal, receipt.StatusFailed,
			codeQuarantined, "preflight", &now
	})
	want("one dispatched, one failed at preflight", c1.RequestID)
	swap(c1, func(c *claims.Claim) {
		c.Phase, c.Status, c.ErrorCode, c.Evidence, c.FinishedAt = claims.PhaseTerminal, receipt.StatusUnknown,
			codeNoTrustworthyReturn, "none", &now
	})
	want("terminal unknown still quarantines", c1.RequestID)
	swap(c1, func(c *claims.Claim) {
		c.Status, c.Passed, c.Total, c.ErrorCode, c.Evidence = receipt.StatusSucceeded, 3, 3, "", "reconciled"
	})
	want("resolved by the minion's receipt")
	c3 := NewClaim()
	c3.MinionID = c1.MinionID
	cur[c3.RequestID] = mustCreate(t, b, c3)
	want("a new request", c3.RequestID)
	swap(c3, func(c *claims.Claim) { c.Phase, c.DispatchedAt = claims.PhaseDispatching, &now })
	swap(c3, func(c *claims.Claim) {
		c.Phase, c.Status, c.ErrorCode, c.Evidence, c.FinishedAt = claims.PhaseAsserted, receipt.StatusFailed,
			codeAsserted, "asserted", &now
	})
	want("resolved by an assertion")
}
