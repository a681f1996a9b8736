package service

import (
	"fmt"
	"testing"
	"time"
)

func TestGuardSeenCountsClearsAndForgets(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	g := newGuardSeen(func() time.Time { return now })
	if f := g.failures(); f != nil {
		t.Fatalf("empty: %v", f)
	}
	g.record("a", false, "call_parallel: unexpected signature")
	g.record("b", false, "call_parallel: unexpected signature")
	g.record("c", false, "")
	g.record("d", true, "")
	f := g.failures()
	if len(f) != 2 || f[0] != (guardFailure{"call_parallel: unexpected signature", 2}) || f[1].Minions != 1 || f[1].Reason == "" {
		t.Fatalf("counts: %+v", f)
	}
	g.record("a", true, "") // a ping whose guard holds clears the minion
	if f := g.failures(); f[0].Minions != 1 || f[1].Minions != 1 {
		t.Fatalf("after a holding ping: %+v", f)
	}
	now = now.Add(guardSeenWindow + time.Second)
	if f := g.failures(); f != nil || len(g.m) != 0 {
		t.Fatalf("after the window: %+v (%d kept)", f, len(g.m))
	}
	for i := range guardSeenMax + 10 {
		now = now.Add(time.Millisecond)
		g.record(fmt.Sprint("m", i), false, "r")
	}
	if len(g.m) != guardSeenMax {
		t.Fatalf("bound: %d entries", len(g.m))
	}
	if _, ok := g.m["m0"]; ok {
		t.Fatal("the oldest entry was kept past the bound")
	}
}
