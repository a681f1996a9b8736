package oduflow

import (
	"sync"
	"time"
)

// Capability answers reused within a bounded freshness window (Timers.CapabilityReuse; 0, the default,
// turns it off). A worker's preflight asks its minion for oduflow_job.capabilities before it records the
// intent; on a fleet that is one Salt job per request on every minion on top of the run and the proof,
// and a Salt job costs the minion a process and tens of milliseconds of CPU whatever it does. With a
// window, a preflight takes an answer this dispatcher received for the same minion and the same profile
// table less than the window ago instead of asking again.
//
// Only clear answers are kept (an answer the preflight would pass: protocol 1, proofs, fencing, the
// runtime guard holding, the fence counter not exhausted, the dispatcher's table): a minion that answered
// anything else is asked again by every preflight. A request of the minion that ends in anything but
// success (a refusal, a failure, unknown) drops the minion's answer, so the next preflight asks.
//
// What it keeps and what it trades: at most once, fencing and the proof are untouched (the claim, the
// intent, the fence token and the signed receipt do not depend on the preflight; the minion module checks
// its runtime guard, the profile table and the fence token again at run time and refuses with nothing
// run). What the window trades is the preflight's early refusal: a minion whose module, table or guard
// changed within the window gets the run published and refuses it itself (a typed failure, nothing run)
// instead of failing the preflight with nothing published; and a fence mark that another claim store
// raised within the window (dispatchers that do not share one claim store) makes the run refused as
// fenced. Ping always asks the minion (it refreshes the kept answer).

// capCacheMax bounds the kept answers (one per minion): past it, expired ones are dropped, and a new
// answer is not kept while the map is still full.
const capCacheMax = 16384

type capCache struct {
	mu sync.Mutex
	m  map[capKey]capEntry
}

// capKey: the minion and the digest of the dispatcher's profile table the answer was checked against.
type capKey struct {
	minion, table string
}

type capEntry struct {
	caps minionCaps
	at   time.Time
}

// capsClear reports whether the preflight passes on caps (everything but the minion key, read from the
// pki dir every time).
func (d *Dispatcher) capsClear(caps minionCaps) bool {
	return caps.Protocol == protocolVersion && caps.RuntimeGuard && !caps.FenceExhausted && caps.Proof &&
		caps.Fencing && d.sameTable(caps)
}

// reusedCaps is the minion's kept answer when it is younger than the window (and not from the future: a
// clock set back never extends it).
func (d *Dispatcher) reusedCaps(minion string) (minionCaps, bool) {
	w := d.timers.CapabilityReuse
	if w <= 0 {
		return minionCaps{}, false
	}
	c := &d.capCache
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[capKey{minion, d.table.Digest()}]
	if !ok {
		return minionCaps{}, false
	}
	if age := d.clock.Now().Sub(e.at); age < 0 || age >= w {
		return minionCaps{}, false
	}
	return e.caps, true
}

// keepCaps keeps a clear answer received at at (when the window is on); an answer that is not clear
// drops the minion's kept one.
func (d *Dispatcher) keepCaps(minion string, caps minionCaps, at time.Time) {
	w := d.timers.CapabilityReuse
	if w <= 0 {
		return
	}
	k := capKey{minion, d.table.Digest()}
	c := &d.capCache
	c.mu.Lock()
	defer c.mu.Unlock()
	if !d.capsClear(caps) {
		delete(c.m, k)
		return
	}
	if c.m == nil {
		c.m = make(map[capKey]capEntry)
	}
	if _, ok := c.m[k]; !ok && len(c.m) >= capCacheMax {
		now := d.clock.Now()
		for k2, e := range c.m {
			if age := now.Sub(e.at); age < 0 || age >= w {
				delete(c.m, k2)
			}
		}
		if len(c.m) >= capCacheMax {
			return
		}
	}
	c.m[k] = capEntry{caps: caps, at: at}
}

// forgetCaps drops the minion's kept answer (a request of it ended in anything but success).
func (d *Dispatcher) forgetCaps(minion string) {
	if d.timers.CapabilityReuse <= 0 {
		return
	}
	c := &d.capCache
	c.mu.Lock()
	delete(c.m, capKey{minion, d.table.Digest()})
	c.mu.Unlock()
}
