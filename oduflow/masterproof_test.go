package oduflow

import (
	"context"
	"testing"
	"time"
)

// TestMasterProofTimer: Timers.MasterProof is how long a master's answered readiness ping admits later
// checks without another. An hour: ten readiness checks cost one ping. A nanosecond: each check pings
// (a master gone is seen by the next Start, no proof to wait out). 0: the default, 3 s.
func TestMasterProofTimer(t *testing.T) {
	t.Parallel()
	e := startSim(t)
	ctx := context.Background()
	pings := func(proof time.Duration) int64 {
		t.Helper()
		p := &pingCountingClient{Client: e.client}
		tm := testTimers()
		tm.MasterProof = proof
		d := e.dispatcherWith(p, WithTimers(tm))
		for range 10 {
			if err := d.Ready(ctx); err != nil {
				t.Fatal(err)
			}
		}
		return p.pings.Load()
	}
	if n := pings(time.Hour); n != 1 {
		t.Fatalf("MasterProof 1h: %d pings for 10 readiness checks, want 1", n)
	}
	if n := pings(time.Nanosecond); n != 10 {
		t.Fatalf("MasterProof 1ns: %d pings for 10 readiness checks, want 10", n)
	}
	if got := DefaultTimers().MasterProof; got != masterProofTTL || (&Dispatcher{}).masterProof() != masterProofTTL {
		t.Fatalf("default MasterProof %v, want %v (and 0 reads as it)", got, masterProofTTL)
	}
}
