// Package backoff is the one reconnect backoff of the module: exponential between a minimum and a
// maximum, with "equal jitter" (each wait is uniform in [d/2, d]) so that many clients that lost the same
// master do not reconnect in lock step.
package backoff

import (
	"context"
	"math/rand/v2"
	"time"
)

// Backoff yields successive waits. The zero value is not usable; use New.
type Backoff struct {
	min, max, cur time.Duration
}

// New returns a Backoff from min doubling up to max (max < min is treated as min).
func New(min, max time.Duration) *Backoff {
	if max < min {
		max = min
	}
	return &Backoff{min: min, max: max, cur: min}
}

// Next returns the next wait and doubles the following one, up to the maximum.
func (b *Backoff) Next() time.Duration {
	d := b.cur
	b.cur = min(b.cur*2, b.max)
	return d/2 + rand.N(d/2+1)
}

// Reset starts again from the minimum (after a success).
func (b *Backoff) Reset() { b.cur = b.min }

// Wait sleeps for Next() or until ctx is done; it reports whether the full wait elapsed.
func (b *Backoff) Wait(ctx context.Context) bool {
	t := time.NewTimer(b.Next())
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
