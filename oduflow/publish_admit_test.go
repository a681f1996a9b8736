package oduflow

import (
	"os"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/oduflow/oduflow-go/oduflow/claims"
	"github.com/oduflow/oduflow-go/oduflow/oduflowtest/fakeminion"
	"github.com/oduflow/oduflow-go/receipt"
)

func TestAdmitterRunsQueuedInOrderWithinSlots(t *testing.T) {
	a := newAdmitter(2)
	started := make(chan int, 10)
	rel := make([]chan struct{}, 10)
	var wg sync.WaitGroup
	for i := range 10 {
		rel[i] = make(chan struct{})
		wg.Add(1)
		a.run(func() {
			defer wg.Done()
			started <- i
			<-rel[i]
			(&admission{a: a, held: true}).release()
		})
	}
	running := map[int]bool{<-started: true, <-started: true}
	if !running[0] || !running[1] {
		t.Fatalf("first two started: %v", running)
	}
	select {
	case i := <-started:
		t.Fatalf("worker %d started with both slots taken", i)
	case <-time.After(50 * time.Millisecond):
	}
	for next := 2; next < 10; next++ {
		for i := range running { // free one slot: exactly the next queued worker starts
			close(rel[i])
			delete(running, i)
			break
		}
		if got := <-started; got != next {
			t.Fatalf("started %d, want the next queued %d", got, next)
		}
		running[next] = true
	}
	for i := range running {
		close(rel[i])
	}
	wg.Wait()
	if a.free != 2 || a.head != 0 || len(a.queue) != 0 {
		t.Fatalf("admitter after the queue drained: free %d head %d queue %d", a.free, a.head, len(a.queue))
	}
}

// Requests held running cost neither a descriptor (request lock and client lease are byte ranges of the
// store's one lock file) nor a goroutine (the wait is parked).
func TestHeldRequestsHoldNoDescriptorsNorGoroutines(t *testing.T) {
	e := startSim(t)
	const n = 40
	d := e.dispatcher()
	minions := e.addMinions(n, fakeminion.WithHold())
	// One request first: it opens what a dispatcher keeps (the event subscription, the lock pool).
	first := uuid.NewString()
	mustStart(t, d, receipt.ProfileConfigure, minions[0].ID(), first)
	waitRuns(t, e, 1)
	waitPhase(t, d, first, claims.PhaseDispatched) // its worker recorded the dispatch and parked its wait
	fds0, gs0 := countFDs(t), runtime.NumGoroutine()
	reqs := make([]string, n)
	for i := 1; i < n; i++ {
		reqs[i] = uuid.NewString()
		mustStart(t, d, receipt.ProfileConfigure, minions[i].ID(), reqs[i])
	}
	waitRuns(t, e, n)
	// The simulated minions' held runs are goroutines of the simulator (one each), not the dispatcher's.
	// A worker that published still records "dispatched" and parks its wait: on a loaded machine that
	// takes a while, so the counts are taken once they settle (or at the deadline, and judged then).
	var fds, gs int
	waitUntil(10*time.Second, func() bool {
		fds, gs = countFDs(t), runtime.NumGoroutine()
		return fds <= fds0+3 && gs <= gs0+(n-1)+3
	})
	if fds > fds0+3 || gs > gs0+(n-1)+3 {
		t.Fatalf("%d more requests held: descriptors %d -> %d, goroutines %d -> %d (the simulator holds %d)",
			n-1, fds0, fds, gs0, gs, n-1)
	}
	for i := 1; i < n; i++ {
		if r, err := d.Status(t.Context(), minions[i].ID(), reqs[i], receipt.ProfileConfigure); err != nil || r.Status != receipt.StatusRunning {
			t.Fatalf("Status of a held request: %+v %v", r, err)
		}
	}
	for _, m := range minions {
		m.Release()
	}
	for i := 1; i < n; i++ {
		if got := waitFinal(t, d, receipt.ProfileConfigure, minions[i].ID(), reqs[i]); got.Status != receipt.StatusSucceeded {
			t.Fatalf("after release: %+v", got)
		}
	}
}

func countFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}
