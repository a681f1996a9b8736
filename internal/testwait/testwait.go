// Package testwait is the tests' one way to wait for a state that nothing announces: a child process's
// state, a file another process writes, a flag of a component with no notification. It polls the condition
// with a backoff (1 ms doubling to 50 ms) under a deadline, so a test waits as long as the state takes to
// arrive and fails with what it waited for when it does not.
//
// A test that can wait on an event (a channel, a hook, a Watch, an injected clock) does so instead; the
// fixed sleeps left in the tests are for what must not happen meanwhile (a late publication that never
// comes), never for ordering.
package testwait

import (
	"testing"
	"time"
)

// Poll checks cond until it holds (true) or timeout has passed (false).
func Poll(timeout time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	for interval := time.Millisecond; ; interval = min(2*interval, 50*time.Millisecond) {
		if cond() {
			return true
		}
		left := time.Until(deadline)
		if left <= 0 {
			return false
		}
		time.Sleep(min(interval, left))
	}
}

// Until waits like Poll and fails the test, naming what, when cond does not hold within timeout.
func Until(tb testing.TB, what string, timeout time.Duration, cond func() bool) {
	tb.Helper()
	if !Poll(timeout, cond) {
		tb.Fatalf("still waiting after %s: %s", timeout, what)
	}
}
