package oduflow

import "time"

// proofLimiter allows at most one early proof request per poll interval for one wait: unverified or
// unconfirmed events ask for the signed answer early, but a flood of them cannot turn into a flood of
// calls, and never spends the poll budget.
type proofLimiter struct {
	interval time.Duration
	last     time.Time
}

func (l *proofLimiter) allow(now time.Time) bool {
	if !l.last.IsZero() && now.Sub(l.last) < l.interval {
		return false
	}
	l.last = now
	return true
}
