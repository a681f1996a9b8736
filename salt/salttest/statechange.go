package salttest

import (
	"context"
	"sync"
)

// stateSignal tells waiters that the simulator's observable state changed: a publication was recorded, a
// minion job started or ended, an event reader joined or left. Each change closes the current channel and
// the next waiter gets a fresh one, so a waiter re-checks its condition once per change and never polls.
type stateSignal struct {
	mu sync.Mutex
	ch chan struct{}
}

func (g *stateSignal) changed() <-chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.ch == nil {
		g.ch = make(chan struct{})
	}
	return g.ch
}

func (g *stateSignal) notify() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.ch != nil {
		close(g.ch)
		g.ch = nil
	}
}

// WaitUntil returns nil once cond holds, checking it now and again after each change of the simulator's
// state (a publication recorded, a minion job started or ended, an event reader connected or gone), or
// ctx's error when ctx ends first. cond reads the simulator through its accessors (PublicationCount,
// EventReaders, Publications, ...), which is how a test waits for the simulator without sleeping.
func (s *Master) WaitUntil(ctx context.Context, cond func() bool) error {
	for {
		changed := s.state.changed() // before cond: a change while cond runs wakes the next select
		if cond() {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
