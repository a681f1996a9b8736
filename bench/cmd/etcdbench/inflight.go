package main

import (
	"context"
	"runtime"
	"time"

	"github.com/google/uuid"

	"github.com/oduflow/oduflow-go/bench/internal/benchkit"
	"github.com/oduflow/oduflow-go/bench/internal/benchsim"
	"github.com/oduflow/oduflow-go/oduflow"
	"github.com/oduflow/oduflow-go/oduflow/claims"
)

// cmdInflight: n requests held in flight on ONE dispatcher on etcd (the member child, fsync on), against
// the sim child's n held minions. Once every request is published (each worker then holds its request
// lock and client lease, two etcd sessions, and waits for its return), it reports the live heap the
// requests added (after GC, minus the heap of the idle dispatcher) per request, this process's peak RSS
// and its goroutines, and how long the Starts and the publications took.
func cmdInflight(ctx context.Context, args []string) (any, error) {
	fs, held := benchsim.InflightFlags(5000, "etcd data directory")
	stall := fs.Duration("stall", 15*time.Second, "stop waiting after this long without a publication")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	n := &held.N
	srv, endpoint, err := startServer(ctx, held.Dir)
	if err != nil {
		return nil, err
	}
	defer srv.Stop()
	sim, err := benchsim.Start(ctx, *n, "")
	if err != nil {
		return nil, err
	}
	defer sim.Stop()
	tm := oduflow.DefaultTimers()
	tm.PollBudget = 1                // hold them running: no status polls while measuring
	tm.CallTimeout = 5 * time.Minute // the queued tail of capability checks is measured, not refused
	tm.LaunchGrace = 10 * time.Minute
	b, err := openBench(ctx, endpoint, "/inflight-"+uuid.NewString()[:8], sim.Hello.Request, sim.Hello.Events,
		sim.Hello.KeyFile, sim.Hello.PKIDir, tm)
	if err != nil {
		return nil, err
	}
	defer b.close()
	heap0, stack0 := benchkit.LiveHeap()
	rss0, _ := benchkit.ProcStatusMiB("VmRSS")
	g0 := runtime.NumGoroutine()

	starts, err := benchsim.StartHeld(ctx, b.d, *n, held.StartConcurrency, false)
	if err != nil {
		return nil, err
	}
	reqs := starts.Requests
	// Wait until every request is published, or no publication came for stall (some workers ended
	// without publishing: their claims say why, and the round reports them).
	deadline := time.Now().Add(held.PublishWait)
	var st benchsim.Stats
	last, lastAt := int64(-1), time.Now()
	for {
		if st, err = sim.Stats(); err != nil {
			return nil, err
		}
		if st.Runs >= int64(*n) {
			break
		}
		if st.Runs != last {
			last, lastAt = st.Runs, time.Now()
		}
		if time.Since(lastAt) > *stall || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	unpublished := map[string]int{}
	if st.Runs < int64(*n) {
		for _, req := range reqs {
			c, err := b.st.Get(ctx, req)
			switch {
			case err != nil:
				unpublished["read error"]++
			case c.Phase != claims.PhaseDispatched: // dispatched: published, its reply recorded
				unpublished[string(c.Phase)+" "+string(c.ErrorCode)]++
			}
		}
	}
	published := time.Since(starts.Began)
	time.Sleep(time.Second) // the last workers record dispatched and settle into their wait
	heap1, stack1 := benchkit.LiveHeap()
	g1 := runtime.NumGoroutine()
	rss, _ := benchkit.ProcStatusMiB("VmHWM")
	perReq := func(a, b uint64) float64 { return benchkit.Round3((float64(b) - float64(a)) / float64(*n) / 1024) }
	return map[string]any{"n": *n, "published": st.Runs, "unpublished": unpublished, "heap_per_request_kb": perReq(heap0, heap1),
		"stack_per_request_kb": perReq(stack0, stack1),
		"heap_idle_mb":         benchkit.Round3(float64(heap0) / (1 << 20)), "heap_inflight_mb": benchkit.Round3(float64(heap1) / (1 << 20)),
		"rss_idle_mb": rss0, "rss_mb": rss, "goroutines_per_request": benchkit.Round3(float64(g1-g0) / float64(*n)),
		"starts_s": benchkit.Round3(starts.Took.Seconds()), "first_start_to_last_publication_s": benchkit.Round3(published.Seconds())}, nil
}
