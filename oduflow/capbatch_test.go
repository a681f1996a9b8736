package oduflow

import (
	"sync"
	"testing"

	"github.com/google/uuid"

	"github.com/oduflow/oduflow-go/oduflow/oduflowtest/fakeminion"
	"github.com/oduflow/oduflow-go/receipt"
)

// TestCapabilityChecksShareAPublication: 13 requests to 13 minions started at once. Their capability
// checks go out in fewer publications than requests (list targets of several minions), each minion's own
// answer decides its request (one minion without receipt proofs fails its preflight alone, nothing
// published for it), one unknown minion id is refused by the master without spoiling its batch, and
// every run publication still targets exactly one minion.
func TestCapabilityChecksShareAPublication(t *testing.T) {
	t.Parallel()
	e := startSim(t)
	d := e.dispatcher()
	const n = 12
	minions := make([]*fakeminion.Model, n)
	for i := range minions {
		if i == 5 {
			minions[i] = e.addMinion(fakeminion.WithoutProof())
			continue
		}
		minions[i] = e.addMinion()
	}
	unknown := newMinionID() // no accepted key: the master matches it to nothing
	reqs := make([]string, n+1)
	var wg sync.WaitGroup
	for i := range reqs {
		reqs[i] = uuid.NewString()
		wg.Add(1)
		go func() {
			defer wg.Done()
			m := unknown
			if i < n {
				m = minions[i].ID()
			}
			mustStart(t, d, receipt.ProfileConfigure, m, reqs[i])
		}()
	}
	wg.Wait()
	for i := range reqs {
		m := unknown
		if i < n {
			m = minions[i].ID()
		}
		r := waitFinal(t, d, receipt.ProfileConfigure, m, reqs[i])
		c := mustClaim(t, d, reqs[i])
		switch {
		case i == 5 || i == n:
			if r.Status != receipt.StatusFailed || c.Evidence != evidencePreflight {
				t.Errorf("request %d: %+v %s/%s, want a preflight failure", i, r, c.Evidence, c.ErrorCode)
			}
		case r.Status != receipt.StatusSucceeded:
			t.Errorf("request %d: %+v (%s)", i, r, c.ErrorCode)
		}
	}
	checks, runs := 0, 0
	for _, p := range e.sim.Publications() {
		switch p.Fun {
		case funCapabilities:
			checks++
		case funRun:
			runs++
			if len(p.Target) != 1 {
				t.Errorf("a run publication to %v", p.Target)
			}
		}
	}
	if runs != n-1 {
		t.Errorf("%d run publications, want %d", runs, n-1)
	}
	if checks >= n {
		t.Errorf("%d capability publications for %d requests: not shared", checks, n+1)
	}
	t.Logf("%d capability publications for %d requests", checks, n+1)
}
