package oduflowtest

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/oduflow/oduflow-go/oduflow/claims"
)

func (s *suite) needProcesses(t *testing.T) {
	t.Helper()
	if !s.f.Capabilities.MultiProcess {
		t.Skip("the store has no other processes (no MultiProcess)")
	}
	if testing.Short() {
		t.Skip("spawns processes")
	}
}

// race runs childProcs children with role on c, opens the barrier once all are ready, and returns the sums
// of their ok and exists counts.
func (s *suite) race(t *testing.T, loc, role string, c *claims.Claim, rounds int) (ok, exists int) {
	data, err := c.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	barrier := filepath.Join(t.TempDir(), "go")
	kids := make([]*child, childProcs)
	for i := range kids {
		kids[i] = s.spawn(t, childJob{Role: role, Location: loc, Claim: data, Barrier: barrier,
			Goroutines: raceGoroutines, Rounds: rounds})
	}
	for _, k := range kids {
		k.expect(t, lineReady)
	}
	if err := os.WriteFile(barrier, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, k := range kids {
		o, e := k.result(t)
		ok, exists = ok+o, exists+e
	}
	return ok, exists
}

func (s *suite) testCreateRaceProcesses(t *testing.T) {
	s.needProcesses(t)
	loc := s.backend(t)
	c := NewClaim()
	ok, exists := s.race(t, loc, roleCreate, c, 0)
	if n := childProcs * raceGoroutines; ok != 1 || exists != n-1 {
		t.Fatalf("%d processes x %d goroutines creating one claim: %d succeeded, %d ErrClaimExists",
			childProcs, raceGoroutines, ok, exists)
	}
	want := clone(c)
	want.Generation = 1
	sameClaim(t, "claim created by the race", mustGet(t, s.open(t, loc), c.RequestID), want)
}

func (s *suite) testCASRaceProcesses(t *testing.T) {
	s.needProcesses(t)
	loc := s.backend(t)
	st := s.open(t, loc)
	c := mustCreate(t, st, NewClaim())
	const rounds = 3
	ok, _ := s.race(t, loc, roleCAS, c, rounds)
	checkIncrements(t, st, c.RequestID, ok, childProcs*raceGoroutines*rounds)
}

// testHolderDeathProcess: a child holding the request lock and the client lease excludes every other
// holder until it is killed with SIGKILL; then both become free (at once for flock, within the TTL for an
// expiring lease) and the guarded write of the survivor goes through.
func (s *suite) testHolderDeathProcess(t *testing.T) {
	s.needProcesses(t)
	loc := s.backend(t)
	st := s.open(t, loc)
	c := mustCreate(t, st, NewClaim())
	data, err := c.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	k := s.spawn(t, childJob{Role: roleHold, Location: loc, Claim: data})
	k.expect(t, lineHeld)
	_, err = st.TryRequestLock(testContext(t), c.RequestID)
	wantErr(t, "TryRequestLock held by another process", err, claims.ErrLeaseBusy)
	if held, err := st.RequestLockHeld(testContext(t), c.RequestID); err != nil || !held {
		t.Fatalf("RequestLockHeld while another process holds it = %v, %v", held, err)
	}
	_, err = st.AcquireClientLease(testContext(t), c.MinionID, 200*time.Millisecond)
	wantErr(t, "AcquireClientLease held by another process", err, claims.ErrLeaseBusy)

	k.kill(t)
	if !eventually(s.releaseGrace(), func() bool {
		held, err := st.RequestLockHeld(testContext(t), c.RequestID)
		return err == nil && !held
	}) {
		t.Fatalf("RequestLockHeld still true %v after the holder was killed", s.releaseGrace())
	}
	s.waitFree(t, st, c)
	rl, cl := holdBoth(t, st, c)
	if _, err := st.CompareAndSwapHeld(testContext(t), intent(c), rl, cl); err != nil {
		t.Fatalf("survivor's CompareAndSwapHeld: %v", err)
	}
}
