package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"runtime"
	"runtime/pprof"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/google/uuid"

	"github.com/oduflow/oduflow-go/oduflow"
	"github.com/oduflow/oduflow-go/oduflow/oduflowtest/fakeminion"
	"github.com/oduflow/oduflow-go/receipt"
	"github.com/oduflow/oduflow-go/salt"
)

// simMinionID is the i-th held minion of the simulator child (both processes derive it).
func simMinionID(i int) string { return fmt.Sprintf("client-00000000-0000-4000-8000-%012d", i) }

// rateMinionID answers test.ping at once: the target of the simulator's own publish-rate anchor.
const rateMinionID = "client-00000000-0000-4000-9000-000000000000"

// simHello is the first line the simulator child prints.
type simHello struct {
	Request string `json:"request"`
	Events  string `json:"events"`
	KeyFile string `json:"key_file"`
	PKIDir  string `json:"pki_dir"`
}

// simStats answers a "stats" line: how many oduflow_job.run publications reached a held minion, and
// when the first and last did (Unix ns, the same clock as the parent's).
type simStats struct {
	Runs  int64 `json:"runs"`
	All   int64 `json:"all"` // every publication that reached a held minion (capability checks too)
	First int64 `json:"first_ns"`
	Last  int64 `json:"last_ns"`
}

// cmdSim is the simulator child of inflight: a simulated master with n held simulated minions (their
// oduflow_job.run never returns until the child quits) and one test.ping minion. Protocol: prints a
// simHello line, then answers each "stats" line on stdin with a simStats line; "quit" or EOF ends it.
func cmdSim(ctx context.Context, args []string) (any, error) {
	fs := flag.NewFlagSet("sim", flag.ContinueOnError)
	n := fs.Int("minions", 10000, "held minions")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	dir, err := simChildDir()
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	sim, err := startSimulator(ctx, dir)
	if err != nil {
		return nil, err
	}
	var runs, all, first, last atomic.Int64
	// The held minions answer like fakeminion models (one model answers their capability checks) but
	// share that model's key and hold every oduflow_job.run until the child quits: 10,000 RSA-2048 keys
	// took longer to generate on a loaded 2-core machine than the whole measured round.
	proto := fakeminion.NewModel(simMinionID(0))
	release := make(chan struct{})
	held := func(ctx context.Context, job simJob) (any, int) {
		all.Add(1)
		if job.Fun != "oduflow_job.run" {
			return proto.Handle(ctx, job)
		}
		now := time.Now().UnixNano()
		runs.Add(1)
		first.CompareAndSwap(0, now)
		for {
			l := last.Load()
			if now <= l || last.CompareAndSwap(l, now) {
				break
			}
		}
		select {
		case <-release:
		case <-ctx.Done():
		}
		return "released", 1
	}
	for i := range *n {
		if err := sim.AcceptMinionKey(simMinionID(i), proto.PublicKeyPEM()); err != nil {
			return nil, err
		}
		sim.AddMinion(simMinionID(i), held)
	}
	sim.AddMinion(rateMinionID, simPingHandler())
	hello, _ := json.Marshal(simHello{Request: simRequestAddr(sim), Events: simEventsAddr(sim), KeyFile: sim.KeyFile(),
		PKIDir: sim.PKIDir()})
	fmt.Println(string(hello))
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() && sc.Text() != "quit" {
		st, _ := json.Marshal(simStats{Runs: runs.Load(), All: all.Load(), First: first.Load(), Last: last.Load()})
		fmt.Println(string(st))
	}
	close(release)
	_ = sim.Close()
	return nil, nil
}

// simChild is the running simulator child process.
type simChild struct {
	cmd   *exec.Cmd
	in    *bufio.Writer
	inRaw interface{ Close() error }
	out   *bufio.Scanner
	hello simHello
}

func startSimChild(ctx context.Context, n int) (*simChild, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, exe, "sim", "-minions", fmt.Sprint(n))
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	c := &simChild{cmd: cmd, in: bufio.NewWriter(in), inRaw: in, out: bufio.NewScanner(out)}
	if !c.out.Scan() {
		c.stop()
		return nil, fmt.Errorf("simulator child did not start")
	}
	if err := json.Unmarshal(c.out.Bytes(), &c.hello); err != nil {
		c.stop()
		return nil, err
	}
	return c, nil
}

func (c *simChild) stats() (simStats, error) {
	var st simStats
	if _, err := c.in.WriteString("stats\n"); err != nil {
		return st, err
	}
	if err := c.in.Flush(); err != nil {
		return st, err
	}
	if !c.out.Scan() {
		return st, fmt.Errorf("simulator child ended")
	}
	return st, json.Unmarshal(c.out.Bytes(), &st)
}

func (c *simChild) stop() {
	_, _ = c.in.WriteString("quit\n")
	_ = c.in.Flush()
	_ = c.inRaw.Close()
	done := make(chan struct{})
	go func() { _ = c.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = c.cmd.Process.Kill()
		<-done
	}
}

// cmdInflight: n requests held in flight on ONE dispatcher (this process) against the simulator in a
// child process. Reports this process's peak RSS (VmHWM), Start latency, Status latency under that
// load, the time from the first Start to the last publication and from the last Start to the last
// publication, and, as the anchor, the simulator's own publish rate (test.ping from `rate` concurrent
// raw Client publishers, measured while the n requests are held) and the time n publications take at
// that rate.
func cmdInflight(ctx context.Context, args []string) (any, error) {
	fs := flag.NewFlagSet("inflight", flag.ContinueOnError)
	n := fs.Int("n", 10000, "requests in flight")
	startConc := fs.Int("start-concurrency", 64, "concurrent Start callers")
	statusN := fs.Int("status", 20000, "Status calls under load")
	statusCallers := fs.Int("status-callers", 8, "concurrent Status callers")
	rateN := fs.Int("rate-publishes", 3000, "publishes of the simulator's own rate anchor")
	base := fs.String("dir", "/var/cache", "claim directory parent")
	pubWait := fs.Duration("publish-wait", 5*time.Minute, "how long to wait for the last publication")
	callTimeout := fs.Duration("call-timeout", oduflow.DefaultTimers().CallTimeout, "the dispatcher's CallTimeout")
	heapProfile := fs.String("heap-profile", "", "write a heap profile here while the n requests are held")
	goroutineProfile := fs.String("goroutine-profile", "", "write a goroutine profile here while the n requests are held")
	profileRate := fs.Int("mem-profile-rate", 0, "runtime.MemProfileRate for -heap-profile (0: the default)")
	cpuProfile := fs.String("cpu-profile", "", "write a CPU profile of the Start phase (first Start to last publication) here")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if *profileRate > 0 {
		runtime.MemProfileRate = *profileRate
	}
	child, err := startSimChild(ctx, *n)
	if err != nil {
		return nil, err
	}
	defer child.stop()
	dir, rm, err := claimDir(*base)
	if err != nil {
		return nil, err
	}
	defer rm()
	newClient := func() (*salt.Client, error) {
		return salt.NewClient(child.hello.Request, salt.WithAuth(salt.UserKey("root", child.hello.KeyFile)),
			salt.WithRequestTimeout(60*time.Second), salt.WithLogger(discard()))
	}
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
	d, err := oduflow.New(c, oduflow.SaltEvents(child.hello.Events, salt.WithLogger(discard())),
		oduflow.WithClaimDir(dir), oduflow.WithPKIDir(child.hello.PKIDir), oduflow.WithTimers(tm), oduflow.WithLogger(discard()))
	if err != nil {
		return nil, err
	}
	reqs := make([]string, *n)
	for i := range reqs {
		reqs[i] = uuid.NewString()
	}
	startLat := make([]time.Duration, *n)
	var next atomic.Int64
	var lastStart atomic.Int64
	var wg sync.WaitGroup
	errc := make(chan error, *startConc)
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return nil, err
		}
	}
	t0 := time.Now()
	for range *startConc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= *n {
					return
				}
				s := time.Now()
				if _, err := d.Start(ctx, simMinionID(i), reqs[i], receipt.ProfileConfigure); err != nil {
					errc <- err
					return
				}
				e := time.Now()
				startLat[i] = e.Sub(s)
				for {
					l := lastStart.Load()
					if e.UnixNano() <= l || lastStart.CompareAndSwap(l, e.UnixNano()) {
						break
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errc)
	if err := <-errc; err != nil {
		return nil, err
	}
	startsDone := time.Since(t0)
	var st simStats
	deadline := time.Now().Add(*pubWait)
	for {
		if st, err = child.stats(); err != nil {
			return nil, err
		}
		if st.Runs >= int64(*n) {
			break
		}
		if time.Now().After(deadline) {
			codes := map[string]int{}
			for i, r := range reqs {
				if c, err := d.Lookup(ctx, simMinionID(i), r); err != nil {
					codes["get: "+err.Error()]++
				} else {
					codes[string(c.Phase)+"/"+c.ErrorCode]++
				}
			}
			return nil, fmt.Errorf("only %d of %d published after %v (open fds %d of %d); claims: %v",
				st.Runs, *n, *pubWait, openFDs(), nofile(), codes)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if *cpuProfile != "" {
		pprof.StopCPUProfile()
	}
	// Status under that load: 8 callers, random running requests. The collections during it (their
	// count, stop-the-world pauses and the CPU fraction the collector took) say how much of the tail is GC.
	var gc0, gc1 runtime.MemStats
	runtime.ReadMemStats(&gc0)
	statusLat := make([]time.Duration, *statusN)
	next.Store(0)
	errc = make(chan error, *statusCallers)
	for range *statusCallers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= *statusN {
					return
				}
				k := rand.IntN(*n)
				s := time.Now()
				r, err := d.Status(ctx, simMinionID(k), reqs[k], receipt.ProfileConfigure)
				statusLat[i] = time.Since(s)
				if err != nil || r.Status != receipt.StatusRunning {
					errc <- fmt.Errorf("status of a held request: %+v %v", r, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errc)
	if err := <-errc; err != nil {
		return nil, err
	}
	runtime.ReadMemStats(&gc1)
	statusGC := map[string]any{"collections": gc1.NumGC - gc0.NumGC,
		"pause_total_ms":      round3(float64(gc1.PauseTotalNs-gc0.PauseTotalNs) / 1e6),
		"gc_cpu_fraction_run": round3(gc1.GCCPUFraction)}
	fds := openFDs()
	mem := readMem(*n, *heapProfile)
	if *goroutineProfile != "" {
		if f, err := os.Create(*goroutineProfile); err == nil {
			_ = pprof.Lookup("goroutine").WriteTo(f, 1)
			_ = f.Close()
		}
	}
	rss, err := vmHWM()
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
	errc = make(chan error, 32)
	r0 := time.Now()
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(*rateN) {
				if _, err := rc.Publish(ctx, salt.PublishRequest{Target: salt.ListTarget(rateMinionID), Fun: "test.ping", JID: gen.Next()}); err != nil {
					errc <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	rateDur := time.Since(r0)
	close(errc)
	if err := <-errc; err != nil {
		return nil, err
	}
	simRate := float64(*rateN) / rateDur.Seconds()
	allPublished := time.Duration(st.Last - t0.UnixNano())
	return map[string]any{
		"n": *n, "gomemlimit": os.Getenv("GOMEMLIMIT"), "call_timeout_s": callTimeout.Seconds(),
		"rss_mb": rss, "mem": mem, "open_fds": fds, "rlimit_nofile": nofile(),
		"start_ms":                          summarize(startLat, time.Millisecond),
		"starts_s":                          round3(startsDone.Seconds()),
		"status_ms":                         summarize(statusLat, time.Millisecond),
		"status_callers":                    *statusCallers,
		"status_phase_gc":                   statusGC,
		"first_start_to_last_publication_s": round3(allPublished.Seconds()),
		"last_start_to_last_publication_ms": round3(float64(st.Last-lastStart.Load()) / 1e6),
		"dispatcher_publish_per_s":          round3(float64(*n) / allPublished.Seconds()),
		"dispatcher_publications":           st.All,
		"dispatcher_all_publish_per_s":      round3(float64(st.All) / allPublished.Seconds()),
		"sim_publish_per_s":                 round3(simRate),
		"sim_time_for_n_s":                  round3(float64(*n) / simRate),
	}, nil
}

// simChildDir is a short directory for the simulator child's event socket (a unix socket path must
// fit in 107 bytes).
func simChildDir() (string, error) { return os.MkdirTemp("", "bsim") }

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
