package service

import (
	"cmp"
	"slices"
	"strings"
	"sync"
	"time"
)

// guardSeen remembers, per minion, the minion module's runtime-guard reason the ping route last saw, so
// /readyz can say why a fleet stopped applying (a Salt upgrade whose internals the module does not know
// refuses every run on those minions, while the service itself stays ready). /readyz is open, so it shows
// reasons and counts, never minion ids; the ids are on the authenticated ping route.
//
// Bounded: at most guardSeenMax minions (the oldest entry goes first) and entries older than
// guardSeenWindow are ignored and dropped.
type guardSeen struct {
	mu  sync.Mutex
	now func() time.Time
	m   map[string]guardEntry
}

type guardEntry struct {
	reason string
	at     time.Time
}

const (
	guardSeenMax    = 4096
	guardSeenWindow = 15 * time.Minute
)

// guardFailure is one line of /readyz's runtime_guard_failures: a reason and how many minions pinged in
// the window reported it.
type guardFailure struct {
	Reason  string `json:"reason"`
	Minions int    `json:"minions"`
}

func newGuardSeen(now func() time.Time) *guardSeen {
	return &guardSeen{now: now, m: make(map[string]guardEntry)}
}

// record notes a ping's result: a failing guard with its reason, or a holding one (which clears it).
func (g *guardSeen) record(minion string, guardHolds bool, reason string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if guardHolds {
		delete(g.m, minion)
		return
	}
	if reason == "" {
		reason = "(the module gave no reason)"
	}
	now := g.now()
	if _, ok := g.m[minion]; !ok && len(g.m) >= guardSeenMax {
		oldest, at := "", now
		for id, e := range g.m {
			if !e.at.After(at) {
				oldest, at = id, e.at
			}
		}
		delete(g.m, oldest)
	}
	g.m[minion] = guardEntry{reason: reason, at: now}
}

// failures answers the reasons seen in the window, most minions first (then by reason), nil when none.
func (g *guardSeen) failures() []guardFailure {
	g.mu.Lock()
	defer g.mu.Unlock()
	cutoff := g.now().Add(-guardSeenWindow)
	counts := make(map[string]int)
	for id, e := range g.m {
		if e.at.Before(cutoff) {
			delete(g.m, id)
			continue
		}
		counts[e.reason]++
	}
	if len(counts) == 0 {
		return nil
	}
	out := make([]guardFailure, 0, len(counts))
	for r, n := range counts {
		out = append(out, guardFailure{Reason: r, Minions: n})
	}
	slices.SortFunc(out, func(a, b guardFailure) int {
		return cmp.Or(cmp.Compare(b.Minions, a.Minions), strings.Compare(a.Reason, b.Reason))
	})
	return out
}
