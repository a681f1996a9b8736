package oduflow

import "sync"

// admitPerPublish: how many in-process workers may be between their request lock and their run publish
// per publish slot (Options' bound on concurrent publishes). The others wait in the admitter's queue,
// holding their request lock (so Status reports them running) and nothing else: no goroutine, no claim
// read, no event subscription, no call deadline running. The capability round trip leaves the publish
// slot while it waits for the return, so several admitted workers per slot keep the slots busy. A worker
// waiting for its client lease (at most Timers.LeaseWait) keeps its slot.
const admitPerPublish = 8

// admitter runs queued workers, at most free+running at a time, in the order they were queued.
type admitter struct {
	mu    sync.Mutex
	free  int
	queue []func()
	head  int
}

func newAdmitter(slots int) *admitter { return &admitter{free: max(1, slots)} }

// run starts f on a new goroutine once a slot is free; f owns the slot until admission.release.
func (a *admitter) run(f func()) {
	a.mu.Lock()
	if a.free > 0 {
		a.free--
		a.mu.Unlock()
		go f()
		return
	}
	a.queue = append(a.queue, f)
	a.mu.Unlock()
}

// tryAcquire takes a free slot for the caller's own goroutine; false when none is free (or workers
// are queued: they come first).
func (a *admitter) tryAcquire() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.free > 0 && a.head == len(a.queue) {
		a.free--
		return true
	}
	return false
}

// done hands the slot to the next queued worker, or frees it.
func (a *admitter) done() {
	a.mu.Lock()
	if a.head == len(a.queue) {
		a.free++
		a.mu.Unlock()
		return
	}
	f := a.queue[a.head]
	a.queue[a.head] = nil
	a.head++
	if a.head == len(a.queue) {
		a.queue, a.head = a.queue[:0], 0
	} else if a.head > 1024 && a.head*2 > len(a.queue) {
		a.queue, a.head = append(a.queue[:0], a.queue[a.head:]...), 0
	}
	a.mu.Unlock()
	go f()
}

// admission is one worker's admission slot (nil for a detached worker process: it runs one request).
type admission struct {
	a    *admitter
	held bool
}

func (m *admission) release() {
	if m != nil && m.held {
		m.held = false
		m.a.done()
	}
}
