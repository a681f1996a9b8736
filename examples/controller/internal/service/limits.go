package service

import "sync"

// inflightLimit bounds the requests one principal has in progress.
type inflightLimit struct {
	max int
	mu  sync.Mutex
	n   map[string]int
}

func newInflightLimit(max int) *inflightLimit {
	if max <= 0 {
		max = DefaultMaxInflight
	}
	return &inflightLimit{max: max, n: map[string]int{}}
}

// acquire takes one slot of name's; ok is false at the bound. release gives it back (once).
func (l *inflightLimit) acquire(name string) (release func(), ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.n[name] >= l.max {
		return nil, false
	}
	l.n[name]++
	var once sync.Once
	return func() {
		once.Do(func() {
			l.mu.Lock()
			defer l.mu.Unlock()
			if l.n[name]--; l.n[name] == 0 {
				delete(l.n, name)
			}
		})
	}, true
}
