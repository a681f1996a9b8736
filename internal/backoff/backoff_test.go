package backoff

import (
	"context"
	"testing"
	"time"
)

func TestNextDoublesWithJitterUpToMax(t *testing.T) {
	b := New(100*time.Millisecond, 800*time.Millisecond)
	for i, ceil := range []time.Duration{100, 200, 400, 800, 800, 800} {
		ceil *= time.Millisecond
		d := b.Next()
		if d < ceil/2 || d > ceil {
			t.Fatalf("wait %d = %v, want in [%v, %v]", i, d, ceil/2, ceil)
		}
	}
	b.Reset()
	if d := b.Next(); d > 100*time.Millisecond {
		t.Fatalf("after Reset: %v", d)
	}
}

func TestWaitStopsOnContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	start := time.Now()
	if New(time.Hour, time.Hour).Wait(ctx) || time.Since(start) > time.Second {
		t.Fatal("Wait did not stop on a done context")
	}
	if !New(time.Millisecond, time.Millisecond).Wait(context.Background()) {
		t.Fatal("Wait on a live context reported cancellation")
	}
}
