package salt

import (
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/errors"
)

func TestJIDGeneratorUniqueUnderConcurrency(t *testing.T) {
	t.Parallel()
	frozen := time.Date(2026, 11, 29, 15, 46, 6, 999_998_000, time.UTC)
	g := &JIDGenerator{now: func() time.Time { return frozen }}
	const workers, per = 8, 500
	var mu sync.Mutex
	seen := map[JID]bool{}
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < per; i++ {
				j := g.Next()
				if _, err := ParseJID(string(j)); err != nil {
					t.Error(err)
				}
				mu.Lock()
				if seen[j] {
					t.Errorf("duplicate %s", j)
				}
				seen[j] = true
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(seen) != workers*per {
		t.Fatalf("%d unique", len(seen))
	}
	// the frozen clock was at .999998: bumping rolls over into the next second
	if !seen["20261129154607000000"] {
		t.Fatal("microsecond bump did not roll over")
	}
}

func TestJIDFormatAndMonotonic(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 29, 15, 46, 6, 42_846_000, time.FixedZone("x", 3600))
	clock := now
	g := &JIDGenerator{now: func() time.Time { return clock }}
	if j := g.Next(); j != "20261129144606042846" {
		t.Fatalf("got %s (must be UTC)", j)
	}
	clock = now.Add(-time.Hour) // clock goes back
	if j := g.Next(); j != "20261129144606042847" {
		t.Fatalf("got %s", j)
	}
	ts, err := JID("20261129144606042847").Time()
	if err != nil || !ts.Equal(time.Date(2026, 11, 29, 14, 46, 6, 42_847_000, time.UTC)) {
		t.Fatalf("%v %v", ts, err)
	}
	real := NewJIDGenerator().Next()
	if jt, _ := real.Time(); time.Since(jt) > time.Minute || time.Since(jt) < -time.Minute {
		t.Fatalf("real clock jid %s", real)
	}
}

func TestParseJID(t *testing.T) {
	t.Parallel()
	for _, bad := range []string{"", "2026112915460604284", "202611291546060428461", "2026112915460604284x",
		"20261129154606042846_123", "２0261129154606042846"} {
		if _, err := ParseJID(bad); !errors.Is(err, ErrInvalidJID) {
			t.Errorf("%q accepted", bad)
		}
	}
	if j, err := ParseJID("20261129154606042846"); err != nil || j.String() != "20261129154606042846" {
		t.Fatal(err)
	}
}
