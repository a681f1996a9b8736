package oduflow

import (
	"context"
	"errors"
	"runtime"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/oduflow/oduflow-go/oduflow/claims"
	"github.com/oduflow/oduflow-go/oduflow/oduflowtest/fakeminion"
	"github.com/oduflow/oduflow-go/receipt"
)

// TestWatchFollowsARequestToItsVerifiedEnd: Watch yields the status now, then each change, and ends at
// succeeded, with no two equal responses in a row and no polling needed (the minion is held until the
// watch has seen running).
func TestWatchFollowsARequestToItsVerifiedEnd(t *testing.T) {
	t.Parallel()
	e := startSim(t)
	m := e.addMinion(fakeminion.WithHold())
	d := e.dispatcher()
	req := uuid.NewString()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var seen []Response
	started := false
	for r, err := range d.Watch(ctx, m.ID(), req, receipt.ProfileConfigure) {
		if err != nil {
			t.Fatalf("after %v: %v", seen, err)
		}
		if len(seen) > 0 && seen[len(seen)-1].String() == r.String() {
			t.Fatalf("the same response twice in a row: %v", r)
		}
		seen = append(seen, r)
		switch {
		case !started:
			if r.Status != receipt.StatusNotStarted {
				t.Fatalf("first yield %v, want not_started", r)
			}
			started = true
			mustStart(t, d, receipt.ProfileConfigure, m.ID(), req)
		case r.Status == receipt.StatusRunning && r.JID != nil:
			m.Release() // dispatched: let the minion finish
		}
	}
	last := seen[len(seen)-1]
	if last.Status != receipt.StatusSucceeded || last.Passed != last.Total || last.Total == 0 {
		t.Fatalf("ended with %v (all: %v)", last, seen)
	}
	if e.runs() != 1 {
		t.Fatalf("%d runs", e.runs())
	}
}

// TestWatchSeesAnotherDispatchersWrites: a watcher on one Dispatcher is woken by the writes of another
// that shares the claim directory (another process, a detached worker, a replica), through the file
// store's change feed, long before its 30 s recheck.
func TestWatchSeesAnotherDispatchersWrites(t *testing.T) {
	t.Parallel()
	e := startSim(t)
	m := e.addMinion()
	writer, watcher := e.dispatcher(), e.dispatcher()
	req := uuid.NewString()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	t0 := time.Now()
	var last Response
	for r, err := range watcher.Watch(ctx, m.ID(), req, receipt.ProfileConfigure) {
		if err != nil {
			t.Fatal(err)
		}
		if r.Status == receipt.StatusNotStarted {
			mustStart(t, writer, receipt.ProfileConfigure, m.ID(), req)
		}
		last = r
	}
	if last.Status != receipt.StatusSucceeded {
		t.Fatalf("ended %v", last)
	}
	if took := time.Since(t0); took > 10*time.Second {
		t.Fatalf("took %v: the watcher waited for a recheck, not the change feed", took)
	}
}

// TestWatchEndsWithItsContext: a watch of a request that never changes ends when its context does,
// yielding the context's error last, and leaves nothing registered.
func TestWatchEndsWithItsContext(t *testing.T) {
	t.Parallel()
	e := startSim(t)
	d := e.dispatcher()
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	var errs []error
	n := 0
	for _, err := range d.Watch(ctx, newMinionID(), uuid.NewString(), receipt.ProfileConfigure) {
		n++
		if err != nil {
			errs = append(errs, err)
		}
	}
	if n != 2 || len(errs) != 1 || !errors.Is(errs[0], context.DeadlineExceeded) {
		t.Fatalf("%d yields, errors %v: want not_started then the deadline", n, errs)
	}
	if d.watchers.watching() {
		t.Fatal("a watcher is still registered")
	}
	// A malformed id is an error at once, as Status answers it.
	for _, err := range d.Watch(context.Background(), "web01 bad", uuid.NewString(), receipt.ProfileConfigure) {
		if !errors.Is(err, claims.ErrInvalidInput) {
			t.Fatalf("malformed id: %v", err)
		}
	}
}

// TestWatchersCostNoGoroutine: 10,000 watches waiting cost the Dispatcher no goroutine each (the callers'
// own goroutines are theirs) and a bounded amount of memory; all are gone once their contexts end.
func TestWatchersCostNoGoroutine(t *testing.T) {
	if testing.Short() {
		t.Skip("10,000 watchers")
	}
	e := startSim(t)
	d := e.dispatcher()
	const n = 10000
	minion := newMinionID()
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	g0 := runtime.NumGoroutine()
	ctx, cancel := context.WithCancel(context.Background())
	var ready, done sync.WaitGroup
	ready.Add(n)
	done.Add(n)
	for range n {
		go func() {
			defer done.Done()
			first := true
			for _, err := range d.Watch(ctx, minion, uuid.NewString(), receipt.ProfileConfigure) {
				if first {
					ready.Done()
					first = false
				}
				_ = err
			}
		}()
	}
	ready.Wait()
	runtime.GC()
	var during runtime.MemStats
	runtime.ReadMemStats(&during)
	extra := runtime.NumGoroutine() - g0 - n
	perWatcher := (int64(during.HeapAlloc) - int64(before.HeapAlloc)) / n
	cancel()
	done.Wait()
	t.Logf("10,000 watchers: %d goroutines beyond the callers', %d bytes of heap each (the callers' stacks are theirs)", extra, perWatcher)
	if extra > 8 {
		t.Errorf("%d goroutines beyond the callers': a watch must cost none of its own", extra)
	}
	if perWatcher > 4096 {
		t.Errorf("%d bytes per watcher", perWatcher)
	}
	if d.watchers.watching() {
		t.Error("watchers left registered")
	}
}

// BenchmarkWatchLatency measures the time from the worker's terminal commit to the watcher's yield of it
// (in-process: the commit wakes the watcher directly): the p50 and p99 as metrics.
func BenchmarkWatchLatency(b *testing.B) {
	e := startSim(b)
	var mu sync.Mutex
	committed := map[string]time.Time{}
	d := e.dispatcher(WithHooks(Hooks{Outcome: func(_ context.Context, ref RequestRef, _ receipt.Status, _ string) {
		mu.Lock()
		committed[ref.RequestID] = time.Now() // right after the terminal commit
		mu.Unlock()
	}}))
	ms := e.addMinions(8)
	var lat []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		m := ms[i%len(ms)]
		req := uuid.NewString()
		for r, err := range d.Watch(context.Background(), m.ID(), req, receipt.ProfileConfigure) {
			if err != nil {
				b.Fatal(err)
			}
			if r.Status == receipt.StatusNotStarted {
				mustStart(b, d, receipt.ProfileConfigure, m.ID(), req)
			}
			if r.Status.Terminal() {
				at := time.Now()
				mu.Lock()
				c, ok := committed[req]
				mu.Unlock()
				if ok {
					lat = append(lat, at.Sub(c))
				}
			}
		}
	}
	b.StopTimer()
	if len(lat) == 0 {
		return
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
}
