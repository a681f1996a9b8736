package oduflowtest

import (
	"context"
	"testing"
	"time"

	"github.com/oduflow/oduflow-go/oduflow/claims"
	"github.com/oduflow/oduflow-go/receipt"
)

// The clauses of the optional capabilities of claims.Store (ListUnresolved has its own file). Each is
// skipped, saying so, for a store without the capability: the Dispatcher then does without it.

// testScanUnresolved: a store that implements claims.UnresolvedScanner yields, through every handle,
// every unresolved claim of every client (and never one that is resolved when the scan begins, unless
// current: callers filter), each one once.
func (s *suite) testScanUnresolved(t *testing.T) {
	loc := s.backend(t)
	a, b := s.open(t, loc), s.open(t, loc)
	if _, ok := a.(claims.UnresolvedScanner); !ok {
		t.Skip("oduflowtest: the store has no index of unresolved claims across clients (claims.UnresolvedScanner)")
	}
	ctx := testContext(t)
	open1, open2, done := NewClaim(), NewClaim(), NewClaim()
	for _, c := range []*claims.Claim{open1, open2, done} {
		mustCreate(t, a, c)
	}
	now := time.Now().UTC()
	next := clone(mustGet(t, a, done.RequestID))
	next.Phase, next.Status, next.ErrorCode, next.Evidence, next.FinishedAt = claims.PhaseTerminal,
		receipt.StatusFailed, codeQuarantined, "preflight", &now
	if _, err := a.CompareAndSwap(ctx, next); err != nil {
		t.Fatalf("CompareAndSwap: %v", err)
	}
	for i, h := range []Store{a, b} {
		seen := map[string]int{}
		for c, err := range h.(claims.UnresolvedScanner).ScanUnresolved(ctx) {
			if err != nil {
				t.Fatalf("handle %d: ScanUnresolved: %v", i, err)
			}
			if c.Unresolved() {
				seen[c.RequestID]++
			} else if c.RequestID != done.RequestID {
				t.Fatalf("handle %d: a resolved claim of another test listed: %s", i, c.RequestID)
			}
		}
		for _, c := range []*claims.Claim{open1, open2} {
			if seen[c.RequestID] != 1 {
				t.Fatalf("handle %d: unresolved claim %s yielded %d times, want once", i, c.RequestID, seen[c.RequestID])
			}
		}
		if seen[done.RequestID] != 0 {
			t.Fatalf("handle %d: the resolved claim yielded as unresolved", i)
		}
	}
}

// testClaimLockReader: GetWithRequestLock answers what Get then RequestLockHeld would, through every
// handle: the claim as stored, the lock free, then held (by another handle), then free after Release.
func (s *suite) testClaimLockReader(t *testing.T) {
	loc := s.backend(t)
	a, b := s.open(t, loc), s.open(t, loc)
	if _, ok := a.(claims.ClaimLockReader); !ok {
		t.Skip("oduflowtest: the store reads the claim and its request lock apart (no claims.ClaimLockReader)")
	}
	ctx := testContext(t)
	c := mustCreate(t, a, NewClaim())
	want := func(step string, held bool) {
		t.Helper()
		for i, h := range []Store{a, b} {
			got, locked, err := h.(claims.ClaimLockReader).GetWithRequestLock(ctx, c.RequestID)
			if err != nil {
				t.Fatalf("%s: handle %d: GetWithRequestLock: %v", step, i, err)
			}
			sameClaim(t, step, got, c)
			if locked != held {
				t.Fatalf("%s: handle %d: request lock held %v, want %v", step, i, locked, held)
			}
		}
	}
	want("free", false)
	l, err := b.TryRequestLock(ctx, c.RequestID)
	if err != nil {
		t.Fatalf("TryRequestLock: %v", err)
	}
	want("held", true)
	if err := l.Release(); err != nil {
		t.Fatalf("Release: %v", err)
	}
	if !eventually(s.releaseGrace(), func() bool {
		_, locked, err := a.(claims.ClaimLockReader).GetWithRequestLock(ctx, c.RequestID)
		return err == nil && !locked
	}) {
		t.Fatal("request lock still read held after Release")
	}
	want("released", false)
	if _, _, err := a.(claims.ClaimLockReader).GetWithRequestLock(ctx, NewClaim().RequestID); !isErr(err, claims.ErrNoClaim) {
		t.Fatalf("GetWithRequestLock of a missing claim: %v (want ErrNoClaim)", err)
	}
}

// testWindowedStore: a store that measures the status windows itself reports, through every handle, the
// launch window open right after Create and shut once it has run out, the dispatch window open after the
// dispatch intent, and the request lock as RequestLockHeld does; GetWithLiveness agrees with Liveness.
func (s *suite) testWindowedStore(t *testing.T) {
	loc := s.backend(t)
	if w, ok := s.open(t, loc).(claims.WindowedStore); !ok {
		t.Skip("oduflowtest: the store does not measure the status windows (no claims.WindowedStore)")
	} else if g, e := w.StatusWindows(); g <= 0 || e <= 0 {
		t.Fatalf("a store opened without windows reports StatusWindows %v, %v (want its positive defaults)", g, e)
	}
	if s.f.OpenWithWindows == nil {
		t.Fatal("oduflowtest: a claims.WindowedStore needs StoreFactory.OpenWithWindows (its windows are given at construction)")
	}
	// Windows long enough that a loaded machine never runs them out by accident, short enough to see one
	// run out: a launch grace of 1.5 s, a dispatch window of 30 s.
	const grace, expiry = 1500 * time.Millisecond, 30 * time.Second
	a, b := s.openWindowed(t, loc, grace, expiry), s.openWindowed(t, loc, grace, expiry)
	for i, h := range []Store{a, b} {
		if g, e := h.(claims.WindowedStore).StatusWindows(); g != grace || e != expiry {
			t.Fatalf("handle %d built with windows %v, %v reports StatusWindows %v, %v", i, grace, expiry, g, e)
		}
	}
	ctx := testContext(t)
	c := mustCreate(t, a, NewClaim())
	lv := func(step string, h Store, cl *claims.Claim) claims.Liveness {
		t.Helper()
		w := h.(claims.WindowedStore)
		l, err := w.Liveness(ctx, cl)
		if err != nil {
			t.Fatalf("%s: Liveness: %v", step, err)
		}
		got, l2, err := w.GetWithLiveness(ctx, cl.RequestID)
		if err != nil {
			t.Fatalf("%s: GetWithLiveness: %v", step, err)
		}
		sameClaim(t, step, got, cl)
		if l.LaunchOpen != l2.LaunchOpen || l.DispatchOpen != l2.DispatchOpen || l.RequestLockHeld != l2.RequestLockHeld {
			t.Fatalf("%s: Liveness %+v but GetWithLiveness %+v", step, l, l2)
		}
		return l
	}
	for i, h := range []Store{a, b} {
		if l := lv("created", h, c); !l.LaunchOpen || l.DispatchOpen || l.RequestLockHeld {
			t.Fatalf("created: handle %d: %+v, want the launch window open, no intent, no lock", i, l)
		}
	}
	lock, err := b.TryRequestLock(ctx, c.RequestID)
	if err != nil {
		t.Fatalf("TryRequestLock: %v", err)
	}
	if l := lv("locked", a, c); !l.RequestLockHeld {
		t.Fatalf("locked: %+v, want the request lock held", l)
	}
	_ = lock.Release()
	if !eventually(grace+s.releaseGrace()+5*time.Second, func() bool {
		l, err := a.(claims.WindowedStore).Liveness(ctx, c)
		return err == nil && !l.LaunchOpen && !l.RequestLockHeld
	}) {
		t.Fatalf("the launch window of %v still open (or the lock held) long after it ran out", grace)
	}
	// A new claim, to its dispatch intent: the dispatch window opens.
	d := mustCreate(t, a, NewClaim())
	reqLock, clientLease := holdBoth(t, a, d)
	out, err := a.CompareAndSwapHeld(ctx, intent(d), reqLock, clientLease)
	if err != nil {
		t.Fatalf("CompareAndSwapHeld to the intent: %v", err)
	}
	_ = reqLock.Release()
	_ = clientLease.Release()
	for i, h := range []Store{a, b} {
		if l := lv("intent", h, out); !l.DispatchOpen {
			t.Fatalf("intent: handle %d: %+v, want the dispatch window open", i, l)
		}
	}
}

// testChangeFeed: a store that implements claims.ChangeFeed reports, on one handle, the writes made
// through another (another process or replica): a Create and a CompareAndSwap each call changed with the
// request id within seconds; WatchChanges returns once its context ends.
func (s *suite) testChangeFeed(t *testing.T) {
	loc := s.backend(t)
	a, b := s.open(t, loc), s.open(t, loc)
	feed, ok := a.(claims.ChangeFeed)
	if !ok {
		t.Skip("oduflowtest: the store has no change feed (claims.ChangeFeed): watchers see other writers at their rechecks only")
	}
	ctx, cancel := context.WithCancel(testContext(t))
	seen := make(chan string, 64)
	ended := make(chan error, 1)
	go func() { ended <- feed.WatchChanges(ctx, func(req string) { seen <- req }) }()
	wait := func(step, req string) {
		t.Helper()
		deadline := time.After(5 * time.Second)
		for {
			select {
			case got := <-seen:
				if got == req {
					return
				}
			case err := <-ended:
				t.Fatalf("%s: WatchChanges ended: %v", step, err)
			case <-deadline:
				t.Fatalf("%s: no change reported for %s within 5 s", step, req)
			}
		}
	}
	// The feed may need a moment to be in place: write until the first report arrives.
	var c *claims.Claim
	deadline := time.Now().Add(5 * time.Second)
	for c == nil {
		next := NewClaim()
		mustCreate(t, b, next)
		select {
		case got := <-seen:
			if got == next.RequestID {
				c = next
			}
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatal("Create: no change reported within 5 s")
		}
	}
	next := clone(mustGet(t, b, c.RequestID))
	next.Phase = claims.PhaseDispatched
	if _, err := b.CompareAndSwap(ctx, next); err != nil {
		t.Fatalf("CompareAndSwap: %v", err)
	}
	wait("CompareAndSwap", c.RequestID)
	cancel()
	select {
	case <-ended:
	case <-time.After(5 * time.Second):
		t.Fatal("WatchChanges did not return after its context ended")
	}
}
