package oduflowtest

import (
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/oduflow/oduflow-go/oduflow/claims"
	"github.com/oduflow/oduflow-go/receipt"
)

// Racing goroutines per handle and rounds per goroutine: enough to interleave on two cores, few enough for
// a store that fsyncs every write.
const (
	raceGoroutines = 8
	casGoroutines  = 3
	casRounds      = 8
)

func (s *suite) testCreate(t *testing.T) {
	t.Run("stores generation 1", func(t *testing.T) {
		st := s.open(t, s.backend(t))
		c := NewClaim()
		in := clone(c)
		in.Generation = 7 // a caller's generation is ignored
		if err := st.Create(testContext(t), in); err != nil {
			t.Fatal(err)
		}
		in.Phase = claims.PhaseTerminal // the store keeps no reference to the caller's claim
		want := clone(c)
		want.Generation = 1
		sameClaim(t, "created claim", mustGet(t, st, c.RequestID), want)
	})
	t.Run("if absent", func(t *testing.T) {
		st := s.open(t, s.backend(t))
		c := NewClaim()
		first := mustCreate(t, st, c)
		other := clone(c)
		other.MinionID = "client-" + receipt.NewRequestID()
		other.JID = randomJID()
		wantErr(t, "second Create", st.Create(testContext(t), other), claims.ErrClaimExists)
		unchanged(t, st, first)
	})
	t.Run("visible to another handle", func(t *testing.T) {
		loc := s.backend(t)
		a, b := s.open(t, loc), s.open(t, loc)
		c := mustCreate(t, a, NewClaim())
		sameClaim(t, "read through a replica", mustGet(t, b, c.RequestID), c)
		wantErr(t, "Create through a replica", b.Create(testContext(t), clone(c)), claims.ErrClaimExists)
	})
	t.Run("race goroutines two handles", func(t *testing.T) {
		loc := s.backend(t)
		handles := []Store{s.open(t, loc), s.open(t, loc)}
		c := NewClaim()
		var wins, exists atomic.Int64
		var wg sync.WaitGroup
		start := make(chan struct{})
		for _, h := range handles {
			for range raceGoroutines {
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					err := h.Create(testContext(t), clone(c))
					switch {
					case err == nil:
						wins.Add(1)
					case isErr(err, claims.ErrClaimExists):
						exists.Add(1)
					default:
						t.Errorf("Create: %v", err)
					}
				}()
			}
		}
		close(start)
		wg.Wait()
		if n := int64(len(handles) * raceGoroutines); wins.Load() != 1 || exists.Load() != n-1 {
			t.Fatalf("%d concurrent Creates: %d succeeded, %d ErrClaimExists", n, wins.Load(), exists.Load())
		}
		if got := mustGet(t, handles[1], c.RequestID); got.Generation != 1 {
			t.Fatalf("generation %d after the race", got.Generation)
		}
	})
	t.Run("race processes", s.testCreateRaceProcesses)
}

func (s *suite) testGet(t *testing.T) {
	t.Run("no claim", func(t *testing.T) {
		st := s.open(t, s.backend(t))
		_, err := st.Get(testContext(t), receipt.NewRequestID())
		wantErr(t, "Get of an absent request", err, claims.ErrNoClaim)
	})
	t.Run("invalid request id", func(t *testing.T) {
		st := s.open(t, s.backend(t))
		for _, id := range []string{"", "../x", "NOT-A-UUID"} {
			if c, err := st.Get(testContext(t), id); err == nil {
				t.Fatalf("Get(%q) = %+v, want an error", id, c)
			}
		}
	})
}

// mutate sets every mutable field of a claim to a new value (what a final commit writes).
func mutate(c *claims.Claim) {
	now := time.Now().UTC()
	later := now.Add(time.Second)
	c.Phase = claims.PhaseTerminal
	c.DispatchedAt, c.FinishedAt, c.ResumedAt = &now, &later, &now
	c.Status = receipt.StatusSucceeded
	c.Passed, c.Total = 3, 4
	c.ErrorCode = codeNoTrustworthyReturn
	c.Evidence = "receipt"
}

func (s *suite) testCompareAndSwap(t *testing.T) {
	t.Run("advances generation", func(t *testing.T) {
		loc := s.backend(t)
		a, b := s.open(t, loc), s.open(t, loc)
		cur := mustCreate(t, a, NewClaim())
		next := clone(cur)
		mutate(next)
		out, err := a.CompareAndSwap(testContext(t), next)
		if err != nil {
			t.Fatal(err)
		}
		want := clone(next)
		want.Generation = 2
		sameClaim(t, "CompareAndSwap result", out, want)
		next.Passed = 0 // the store keeps no reference to the caller's claim
		out.Total = 99
		sameClaim(t, "stored after CompareAndSwap", mustGet(t, b, cur.RequestID), want)
	})
	t.Run("stale generation", func(t *testing.T) {
		loc := s.backend(t)
		a, b := s.open(t, loc), s.open(t, loc)
		cur := mustCreate(t, a, NewClaim())
		first, second := clone(cur), clone(cur)
		first.Phase = claims.PhaseDispatching
		won, err := a.CompareAndSwap(testContext(t), first)
		if err != nil {
			t.Fatal(err)
		}
		mutate(second)
		got, err := b.CompareAndSwap(testContext(t), second)
		wantErr(t, "CompareAndSwap with a stale generation", err, claims.ErrConflict)
		sameClaim(t, "current claim returned with ErrConflict", got, won)
		unchanged(t, a, won)
	})
	t.Run("no claim", func(t *testing.T) {
		st := s.open(t, s.backend(t))
		c := NewClaim()
		c.Generation = 1
		_, err := st.CompareAndSwap(testContext(t), c)
		wantErr(t, "CompareAndSwap of an absent request", err, claims.ErrNoClaim)
		_, err = st.Get(testContext(t), c.RequestID)
		wantErr(t, "Get after a refused CompareAndSwap", err, claims.ErrNoClaim)
	})
	t.Run("identity immutable", func(t *testing.T) {
		st := s.open(t, s.backend(t))
		cur := mustCreate(t, st, NewClaim())
		for _, tc := range []struct {
			field string
			set   func(*claims.Claim)
		}{
			{"minion_id", func(c *claims.Claim) { c.MinionID = "client-" + receipt.NewRequestID() }},
			{"profile", func(c *claims.Claim) { c.Profile = receipt.ProfileProduction }},
			{"role", func(c *claims.Claim) { c.Role = "roles.client_production" }},
			{"state_digest", func(c *claims.Claim) { c.StateDigest = "sha256:00" }},
			{"payload_ref", func(c *claims.Claim) { c.PayloadRef = "payload-1" }},
			{"jid", func(c *claims.Claim) { c.JID = randomJID() }},
			{"created_at", func(c *claims.Claim) { c.CreatedAt = c.CreatedAt.Add(-time.Hour) }},
			{"protocol", func(c *claims.Claim) { c.Protocol = 0 }},
		} {
			next := clone(cur)
			tc.set(next)
			_, err := st.CompareAndSwap(testContext(t), next)
			wantErr(t, "CompareAndSwap changing "+tc.field, err, claims.ErrConflict)
			unchanged(t, st, cur)
		}
	})
	t.Run("race goroutines two handles", func(t *testing.T) {
		loc := s.backend(t)
		handles := []Store{s.open(t, loc), s.open(t, loc)}
		cur := mustCreate(t, handles[0], NewClaim())
		var ok atomic.Int64
		var wg sync.WaitGroup
		for _, h := range handles {
			for range casGoroutines {
				wg.Add(1)
				go func() {
					defer wg.Done()
					n, err := incrementTotal(testContext(t), h, cur.RequestID, casRounds)
					ok.Add(int64(n))
					if err != nil {
						t.Error(err)
					}
				}()
			}
		}
		wg.Wait()
		checkIncrements(t, handles[1], cur.RequestID, int(ok.Load()), len(handles)*casGoroutines*casRounds)
	})
	t.Run("race processes", s.testCASRaceProcesses)
}

// checkIncrements verifies a fenced-increment race: no lost update (Total counts every success) and the
// generation counts every committed write.
func checkIncrements(t testing.TB, st Store, requestID string, succeeded, want int) {
	t.Helper()
	got := mustGet(t, st, requestID)
	if succeeded != want || got.Total != want || got.Generation != uint64(want)+1 {
		t.Fatalf("fenced increments: %d succeeded (want %d), stored total %d generation %d (want %d, %d)",
			succeeded, want, got.Total, got.Generation, want, want+1)
	}
}

func (s *suite) testListByClient(t *testing.T) {
	t.Run("own claims latest", func(t *testing.T) {
		loc := s.backend(t)
		a, b := s.open(t, loc), s.open(t, loc)
		c1 := NewClaim()
		c2 := NewClaim()
		c2.MinionID, c2.Profile, c2.Role = c1.MinionID, receipt.ProfileProduction, "roles.client_production"
		other := NewClaim()
		stored1, stored2 := mustCreate(t, a, c1), mustCreate(t, b, c2)
		mustCreate(t, a, other)
		next := clone(stored1)
		mutate(next)
		updated, err := a.CompareAndSwap(testContext(t), next)
		if err != nil {
			t.Fatal(err)
		}
		for i, h := range []Store{a, b} {
			got := listMap(t, h, c1.MinionID)
			if len(got) != 2 {
				t.Fatalf("handle %d: %d claims listed, want 2", i, len(got))
			}
			sameClaim(t, "listed updated claim", got[c1.RequestID], updated)
			sameClaim(t, "listed claim", got[c2.RequestID], stored2)
		}
		if got := listMap(t, b, "client-"+receipt.NewRequestID()); len(got) != 0 {
			t.Fatalf("unknown minion: %d claims", len(got))
		}
	})
	t.Run("host-named clients", func(t *testing.T) {
		// Any minion id of the id policy (receipt.ValidateMinionID), a table profile and its role: each
		// client lists its own claims only, including ids that look like a store's own names, and the
		// client leases of two host-named clients are independent.
		loc := s.backend(t)
		st := s.open(t, loc)
		ids := []string{"web01.prod.example.com", "web01", "web01.locked", "clients", "open", "lease-web01", "A-b_c.9",
			strings.Repeat("x", 128)}
		stored := map[string]*claims.Claim{}
		for _, id := range ids {
			c := NewClaim()
			c.MinionID, c.Profile, c.Role = id, "webserver", "roles.webserver,roles.monitoring"
			stored[id] = mustCreate(t, st, c)
		}
		for _, id := range ids {
			got := listMap(t, st, id)
			if len(got) != 1 {
				t.Fatalf("%s: %d claims listed, want 1", id, len(got))
			}
			sameClaim(t, "host-named claim", got[stored[id].RequestID], stored[id])
		}
		ctx := testContext(t)
		la, err := st.AcquireClientLease(ctx, "web01", time.Second)
		if err != nil {
			t.Fatal(err)
		}
		lb, err := st.AcquireClientLease(ctx, "web01.locked", time.Second)
		if err != nil {
			t.Fatalf("the lease of web01.locked is not web01's: %v", err)
		}
		_ = lb.Release()
		_ = la.Release()
		for _, bad := range []string{"web*", "a/b", "..", "a..b", "web 01", "", "web01.lock", strings.Repeat("x", 129)} {
			if _, err := st.ListByClient(ctx, bad); err == nil {
				t.Fatalf("%q listed", bad)
			}
		}
	})
	t.Run("consistent under concurrent creates", func(t *testing.T) {
		loc := s.backend(t)
		a, b := s.open(t, loc), s.open(t, loc)
		minion := "client-" + receipt.NewRequestID()
		const perHandle = 6
		var mu sync.Mutex
		started := map[string]bool{} // request ids whose Create has begun
		var wg sync.WaitGroup
		for _, h := range []Store{a, b} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range perHandle {
					c := NewClaim()
					c.MinionID = minion
					mu.Lock()
					started[c.RequestID] = true
					mu.Unlock()
					if err := h.Create(testContext(t), c); err != nil {
						t.Error(err)
					}
					noise := NewClaim() // another client's claim, interleaved
					if err := h.Create(testContext(t), noise); err != nil {
						t.Error(err)
					}
				}
			}()
		}
		done := make(chan struct{})
		go func() { wg.Wait(); close(done) }()
		lists := 0
		for running := true; running; lists++ {
			select {
			case <-done:
				running = false
			default:
			}
			// Only claims whose Create has begun, each once, each valid and the minion's own.
			got := listMap(t, b, minion)
			mu.Lock()
			for id, c := range got {
				if !started[id] || c.MinionID != minion || c.Generation != 1 {
					mu.Unlock()
					t.Fatalf("listed %+v: not one of the minion's created claims", c)
				}
			}
			mu.Unlock()
		}
		for _, h := range []Store{a, b} {
			if got := listMap(t, h, minion); len(got) != 2*perHandle {
				t.Fatalf("after the creates: %d claims listed, want %d", len(got), 2*perHandle)
			}
		}
		t.Logf("%d lists during the creates", lists)
	})
}

// listMap lists a minion's claims by request id, failing on duplicates and invalid claims.
func listMap(t testing.TB, st Store, minionID string) map[string]*claims.Claim {
	t.Helper()
	list, err := st.ListByClient(testContext(t), minionID)
	if err != nil {
		t.Fatalf("ListByClient: %v", err)
	}
	out := make(map[string]*claims.Claim, len(list))
	for _, c := range list {
		if c == nil || c.Validate() != nil {
			t.Fatalf("ListByClient returned an invalid claim %+v", c)
		}
		if out[c.RequestID] != nil {
			t.Fatalf("ListByClient returned %s twice", c.RequestID)
		}
		out[c.RequestID] = c
	}
	return out
}
