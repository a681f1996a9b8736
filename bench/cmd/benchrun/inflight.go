package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"runtime/pprof"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/oduflow/oduflow-go/bench/internal/benchkit"
	"github.com/oduflow/oduflow-go/bench/internal/benchsim"
	"github.com/oduflow/oduflow-go/oduflow"
	"github.com/oduflow/oduflow-go/receipt"
	"github.com/oduflow/oduflow-go/salt"
)

// cmdInflight: n requests held in flight on ONE dispatcher (this process) against the simulator in a
// child process. Reports this process's peak RSS (VmHWM), Start latency, Status latency under that
// load, the time from the first Start to the last publication and from the last Start to the last
// publication, and, as the anchor, the simulator's own publish rate (test.ping from `rate` concurrent
// raw Client publishers, measured while the n requests are held) and the time n publications take at
// that rate.
func cmdInflight(ctx context.Context, args []string) (any, error) {
	fs, held := benchsim.InflightFlags(10000, "claim directory")
	statusN := fs.Int("status", 20000, "Status calls under load")
	statusCallers := fs.Int("status-callers", 8, "concurrent Status callers")
	leaveDir := fs.Bool("leave-dir", false, "leave the claim directory for the caller to remove (see claimDirLeft)")
	statusSettle := fs.Duration("status-settle", 3*time.Second, "pause before the second Status measurement")
	rateN := fs.Int("rate-publishes", 3000, "publishes of the simulator's own rate anchor")
	callTimeout := fs.Duration("call-timeout", oduflow.DefaultTimers().CallTimeout, "the dispatcher's CallTimeout")
	heapProfile := fs.String("heap-profile", "", "write a heap profile here while the n requests are held")
	goroutineProfile := fs.String("goroutine-profile", "", "write a goroutine profile here while the n requests are held")
	cpuProfile := fs.String("cpu-profile", "", "write a CPU profile of this process from the first Start to the last publication here")
	simProfile := fs.String("sim-cpu-profile", "", "the simulator child writes a CPU profile of its life here")
	profileRate := fs.Int("mem-profile-rate", 0, "runtime.MemProfileRate for -heap-profile (0: the default)")
	mutexProfile := fs.String("mutex-profile", "", "write a mutex profile (every contention) from the first Start to the last publication here")
	blockProfile := fs.String("block-profile", "", "write a block profile (every event) from the first Start to the last publication here")
	waitSamples := fs.String("wait-samples", "", "write where the goroutines were, sampled every 200 ms from the first Start to the last publication, here")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if *profileRate > 0 {
		runtime.MemProfileRate = *profileRate
	}
	n := &held.N
	child, err := benchsim.Start(ctx, *n, *simProfile)
	if err != nil {
		return nil, err
	}
	defer child.Stop()
	dir, rm, err := claimDirLeft(held.Dir, *leaveDir)
	if err != nil {
		return nil, err
	}
	defer rm()
	newClient := func() (*salt.Client, error) { return benchsim.NewClient(child.Hello.Request, child.Hello.KeyFile) }
	c, err := newClient()
	if err != nil {
		return nil, err
	}
	defer c.Close()
	tm := oduflow.DefaultTimers()
	tm.PollBudget = 1 // hold them running: no status polls while measuring
	// The production CallTimeout: a worker's capability check counts it from its publication, not from
	// the wait for a publish slot behind the n-1 others.
	tm.CallTimeout = *callTimeout
	// Publications by function (the run and the capability checks) and the capability checks' and
	// publishes' durations: what the pipeline did per request.
	var pubs sync.Map // fun -> *atomic.Int64
	var capObs, pubObs durations
	hooks := oduflow.Hooks{
		Published: func(_ context.Context, _ oduflow.RequestRef, fun, result string) {
			v, _ := pubs.LoadOrStore(fun+"/"+result, new(atomic.Int64))
			v.(*atomic.Int64).Add(1)
		},
		Observe: func(_ context.Context, _ oduflow.RequestRef, op string, dur time.Duration) {
			switch op {
			case "capabilities":
				capObs.add(dur)
			case "publish":
				pubObs.add(dur)
			}
		},
	}
	d, err := oduflow.New(c, oduflow.SaltEvents(child.Hello.Events, salt.WithLogger(benchkit.Discard())),
		oduflow.WithClaimDir(dir), oduflow.WithPKIDir(child.Hello.PKIDir), oduflow.WithTimers(tm), oduflow.WithLogger(benchkit.Discard()),
		oduflow.WithHooks(hooks))
	if err != nil {
		return nil, err
	}
	st0, err := child.Stats()
	if err != nil {
		return nil, err
	}
	cpu0 := benchkit.CPUTime()
	stopProfile, err := benchkit.StartCPUProfile(*cpuProfile)
	if err != nil {
		return nil, err
	}
	defer stopProfile() // at once below; this one covers the early returns
	stopContention := benchkit.StartContentionProfiles(*mutexProfile, *blockProfile)
	defer stopContention()
	stopWaits := benchkit.WaitSampler(*waitSamples, 200*time.Millisecond)
	defer stopWaits()
	starts, err := benchsim.StartHeld(ctx, d, *n, held.StartConcurrency, true)
	if err != nil {
		return nil, err
	}
	reqs := starts.Requests
	var next atomic.Int64
	var wg sync.WaitGroup
	var st benchsim.Stats
	deadline := time.Now().Add(held.PublishWait)
	for {
		if st, err = child.Stats(); err != nil {
			return nil, err
		}
		if st.Runs >= int64(*n) {
			break
		}
		if time.Now().After(deadline) {
			codes := map[string]int{}
			for i, r := range reqs {
				if c, err := d.Lookup(ctx, benchsim.MinionID(i), r); err != nil {
					codes["get: "+err.Error()]++
				} else {
					codes[string(c.Phase)+"/"+string(c.ErrorCode)]++
				}
			}
			return nil, fmt.Errorf("only %d of %d published after %v (open fds %d of %d); claims: %v",
				st.Runs, *n, held.PublishWait, openFDs(), nofile(), codes)
		}
		time.Sleep(20 * time.Millisecond)
	}
	stopProfile()
	stopContention()
	stopWaits()
	dispatcherCPU, simCPU := benchkit.CPUTime()-cpu0, time.Duration(st.CPUNs-st0.CPUNs)
	// Status under that load: 8 callers, random running requests. The collections during it (their
	// count, stop-the-world pauses and the CPU fraction the collector took) say how much of the tail is GC.
	var gc0, gc1 runtime.MemStats
	runtime.ReadMemStats(&gc0)
	statusLat, err := statusUnderLoad(ctx, d, reqs, *statusN, *statusCallers)
	if err != nil {
		return nil, err
	}
	runtime.ReadMemStats(&gc1)
	statusGC := map[string]any{"collections": gc1.NumGC - gc0.NumGC,
		"pause_total_ms":      benchkit.Round3(float64(gc1.PauseTotalNs-gc0.PauseTotalNs) / 1e6),
		"gc_cpu_fraction_run": benchkit.Round3(gc1.GCCPUFraction)}
	// The same calls again once the dispatcher has settled (the last workers' dispatched writes, the
	// kernel's writeback of the claims just written): the first measurement runs right after the last
	// publication, and how much of the work behind it is still going varies from round to round.
	settle := time.Now()
	time.Sleep(*statusSettle)
	statusSettled, err := statusUnderLoad(ctx, d, reqs, *statusN, *statusCallers)
	if err != nil {
		return nil, err
	}
	fds := openFDs()
	mem := benchkit.ReadMem(*n, *heapProfile)
	if *goroutineProfile != "" {
		if f, err := os.Create(*goroutineProfile); err == nil {
			_ = pprof.Lookup("goroutine").WriteTo(f, 1)
			_ = f.Close()
		}
	}
	rss, err := benchkit.ProcStatusMiB("VmHWM")
	if err != nil {
		return nil, err
	}
	// The anchor: the simulator's own publish rate, raw publishes with as many callers as the
	// dispatcher's publish bound, in the same state (n requests held).
	rc, err := newClient()
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	gen := salt.NewJIDGenerator()
	next.Store(0)
	errc := make(chan error, 32)
	sa0, err := child.Stats()
	if err != nil {
		return nil, err
	}
	ca0 := benchkit.CPUTime()
	r0 := time.Now()
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(*rateN) {
				if _, err := rc.Publish(ctx, salt.PublishRequest{Target: salt.ListTarget(benchsim.RateMinionID), Fun: "test.ping", JID: gen.Next()}); err != nil {
					errc <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	rateDur := time.Since(r0)
	anchorClientCPU := benchkit.CPUTime() - ca0
	close(errc)
	if err := <-errc; err != nil {
		return nil, err
	}
	sa1, err := child.Stats()
	if err != nil {
		return nil, err
	}
	anchorSimCPU := time.Duration(sa1.CPUNs - sa0.CPUNs)
	perMs := func(d time.Duration, k int64) float64 { return benchkit.Round3(float64(d) / 1e6 / float64(k)) }
	simRate := float64(*rateN) / rateDur.Seconds()
	allPublished := time.Duration(st.Last - starts.Began.UnixNano())
	return map[string]any{
		"n": *n, "gomemlimit": os.Getenv("GOMEMLIMIT"), "call_timeout_s": callTimeout.Seconds(),
		"rss_mb": rss, "mem": mem, "open_fds": fds, "rlimit_nofile": nofile(),
		"start_ms":                          benchkit.Summarize(starts.Latency, time.Millisecond),
		"starts_s":                          benchkit.Round3(starts.Took.Seconds()),
		"status_ms":                         benchkit.Summarize(statusLat, time.Millisecond),
		"status_callers":                    *statusCallers,
		"status_settled_ms":                 benchkit.Summarize(statusSettled, time.Millisecond),
		"status_settled_after_s":            benchkit.Round3(time.Since(settle).Seconds()),
		"status_phase_gc":                   statusGC,
		"first_start_to_last_publication_s": benchkit.Round3(allPublished.Seconds()),
		"last_start_to_last_publication_ms": benchkit.Round3(float64(st.Last-starts.Last.UnixNano()) / 1e6),
		"dispatcher_publish_per_s":          benchkit.Round3(float64(*n) / allPublished.Seconds()),
		"dispatcher_publications":           st.All,
		"dispatcher_all_publish_per_s":      benchkit.Round3(float64(st.All) / allPublished.Seconds()),
		"sim_publish_per_s":                 benchkit.Round3(simRate),
		"sim_time_for_n_s":                  benchkit.Round3(float64(*n) / simRate),
		// CPU seconds from the first Start to the last publication: this process (the dispatcher and the
		// Start callers) and the simulator child; with the wall time they say which one the row waits on.
		"dispatcher_cpu_s": benchkit.Round3(dispatcherCPU.Seconds()),
		"sim_cpu_s":        benchkit.Round3(simCPU.Seconds()),
		// CPU per request on each side, and the anchor's CPU per raw publication (its simulator and its
		// raw client): on a machine of c cores neither rate can pass c / (the sum of its CPU per
		// publication), which says whether a ratio is bounded by the cores the two processes share.
		"dispatcher_cpu_per_request_ms":    perMs(dispatcherCPU, int64(*n)),
		"sim_cpu_per_request_ms":           perMs(simCPU, int64(*n)),
		"anchor_sim_cpu_per_publish_ms":    perMs(anchorSimCPU, int64(*rateN)),
		"anchor_client_cpu_per_publish_ms": perMs(anchorClientCPU, int64(*rateN)),
		"cpus":                             runtime.NumCPU(),
		// Publication calls by function/result (a capability publication serves a batch of checks), and
		// the durations the hooks observed (a capability check from its publication to its answer; a
		// publish's send -> reply).
		"publications_by_fun": pubCounts(&pubs),
		"capabilities_ms":     capObs.summary(),
		"publish_ms":          pubObs.summary(),
	}, nil
}

// openFDs counts this process's open file descriptors.
func openFDs() int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return -1
	}
	return len(ents)
}

// nofile is the soft RLIMIT_NOFILE (Go raises it to the hard limit at start).
func nofile() uint64 {
	var rl syscall.Rlimit
	_ = syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl)
	return rl.Cur
}

// durations collects observed durations from many goroutines.
type durations struct {
	mu sync.Mutex
	d  []time.Duration
}

func (o *durations) add(d time.Duration) {
	o.mu.Lock()
	o.d = append(o.d, d)
	o.mu.Unlock()
}

func (o *durations) summary() benchkit.Summary {
	o.mu.Lock()
	defer o.mu.Unlock()
	return benchkit.Summarize(o.d, time.Millisecond)
}

func pubCounts(m *sync.Map) map[string]int64 {
	out := map[string]int64{}
	m.Range(func(k, v any) bool {
		out[k.(string)] = v.(*atomic.Int64).Load()
		return true
	})
	return out
}

// statusUnderLoad makes n Status calls of random held requests from callers goroutines and returns
// their latencies; every answer must be running.
func statusUnderLoad(ctx context.Context, d *oduflow.Dispatcher, reqs []string, n, callers int) ([]time.Duration, error) {
	lat := make([]time.Duration, n)
	var next atomic.Int64
	var wg sync.WaitGroup
	errc := make(chan error, callers)
	for range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				k := rand.IntN(len(reqs))
				s := time.Now()
				r, err := d.Status(ctx, benchsim.MinionID(k), reqs[k], receipt.ProfileConfigure)
				lat[i] = time.Since(s)
				if err != nil || r.Status != receipt.StatusRunning {
					errc <- fmt.Errorf("status of a held request: %+v %v", r, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errc)
	return lat, <-errc
}
