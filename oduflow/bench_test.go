package oduflow

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/oduflow/oduflow-go/oduflow/claims"
	"github.com/oduflow/oduflow-go/oduflow/filestore"
	"github.com/oduflow/oduflow-go/oduflow/oduflowtest/fakeminion"
	"github.com/oduflow/oduflow-go/receipt"
	"github.com/oduflow/oduflow-go/salt"
)

// benchInFlight is the number of requests held running (ODUFLOW_BENCH_INFLIGHT, default 5000).
func benchInFlight() int {
	if n, err := strconv.Atoi(os.Getenv("ODUFLOW_BENCH_INFLIGHT")); err == nil && n > 0 {
		return n
	}
	return 5000
}

type latencies struct {
	mu sync.Mutex
	d  []time.Duration
}

func (l *latencies) add(d time.Duration) {
	l.mu.Lock()
	l.d = append(l.d, d)
	l.mu.Unlock()
}

func (l *latencies) pct(p float64) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.d) == 0 {
		return 0
	}
	s := slices.Clone(l.d)
	slices.Sort(s)
	return s[int(p*float64(len(s)-1))]
}

// BenchmarkDispatcher holds N requests running on N Go-only simulated minions (one shared event-bus
// subscription in the dispatcher), then measures Start and Status latency and the memory per in-flight
// request.
func BenchmarkDispatcher(b *testing.B) {
	var rl syscall.Rlimit
	_ = syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl)
	n := benchInFlight()
	e := startSim(b)
	tm := DefaultTimers()
	tm.PollBudget = 1 // hold them running: no status polls during the benchmark
	d := e.dispatcherWith(e.newClient(salt.WithRequestTimeout(60*time.Second)), WithTimers(tm))
	ctx := context.Background()

	minions := make([]*fakeminion.Model, n)
	for i := range minions {
		minions[i] = e.addMinion(fakeminion.WithHold())
	}
	defer func() {
		for _, m := range minions {
			m.Release()
		}
	}()
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	gBefore := runtime.NumGoroutine()

	var startLat latencies
	reqs := make([]string, n)
	t0 := time.Now()
	var wg sync.WaitGroup
	sem := make(chan struct{}, 64)
	for i := range reqs {
		reqs[i] = uuid.NewString()
		wg.Add(1)
		sem <- struct{}{}
		go func(i int) {
			defer wg.Done()
			defer func() { <-sem }()
			s := time.Now()
			if _, err := d.Start(ctx, minions[i].ID(), reqs[i], receipt.ProfileConfigure); err != nil {
				b.Error(err)
			}
			startLat.add(time.Since(s))
		}(i)
	}
	wg.Wait()
	startAll := time.Since(t0)
	if !waitUntil(3*time.Minute, func() bool { return e.runs() >= n }) {
		codes := map[string]int{}
		for _, r := range reqs {
			c, _ := d.store.Get(ctx, r)
			codes[string(c.Phase)+"/"+string(c.ErrorCode)]++
		}
		b.Fatalf("only %d of %d in flight: %v", e.runs(), n, codes)
	}
	inflight := time.Since(t0)
	runtime.GC()
	runtime.ReadMemStats(&after)
	gAfter := runtime.NumGoroutine()
	b.Logf("in flight: %d requests (RLIMIT_NOFILE %d); %d Starts in %v, all published after %v; Start p50 %v p99 %v",
		n, rl.Cur, n, startAll, inflight, startLat.pct(0.5), startLat.pct(0.99))
	b.Logf("memory: heap %+.1f MiB (%.1f KiB per in-flight request, sim and minions included); goroutines %+d",
		float64(int64(after.HeapAlloc)-int64(before.HeapAlloc))/(1<<20),
		float64(int64(after.HeapAlloc)-int64(before.HeapAlloc))/1024/float64(n), gAfter-gBefore)

	b.Run("Status/running", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			r, err := d.Status(ctx, minions[i%n].ID(), reqs[i%n], receipt.ProfileConfigure)
			if err != nil || r.Status != receipt.StatusRunning {
				b.Fatalf("%+v %v", r, err)
			}
			i++
		}
	})
	b.Run("Start/existing", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			if _, err := d.Start(ctx, minions[i%n].ID(), reqs[i%n], receipt.ProfileConfigure); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
	b.Run("Start/new-claim", func(b *testing.B) {
		// A fresh request per iteration on a fresh minion; its worker goes on in the background.
		extra := make([]*fakeminion.Model, 0, b.N)
		defer func() {
			for _, m := range extra {
				m.Release()
			}
		}()
		b.ReportAllocs()
		for b.Loop() {
			b.StopTimer()
			m := e.addMinion(fakeminion.WithHold())
			extra = append(extra, m)
			req := uuid.NewString()
			b.StartTimer()
			if _, err := d.Start(ctx, m.ID(), req, receipt.ProfileConfigure); err != nil {
				b.Fatal(err)
			}
		}
	})
	fmt.Fprintf(os.Stderr, "in-flight=%d nofile=%d\n", n, rl.Cur)
}

// BenchmarkFsyncFloor is the disk's floor for one durable small-file create, in the file system of the
// claim directories: exclusive temporary file, 300-byte write, fsync, rename, directory fsync. The Start
// and Create benchmarks compare with it (scripts/bench.sh's start row does the same with its own floor
// program).
func BenchmarkFsyncFloor(b *testing.B) {
	dir := b.TempDir() // the file system of claimDir
	payload := make([]byte, 300)
	i := 0
	for b.Loop() {
		i++
		f, err := os.CreateTemp(dir, ".claim-*.tmp")
		if err != nil {
			b.Fatal(err)
		}
		if _, err := f.Write(payload); err != nil {
			b.Fatal(err)
		}
		if err := f.Sync(); err != nil {
			b.Fatal(err)
		}
		if err := f.Close(); err != nil {
			b.Fatal(err)
		}
		if err := os.Rename(f.Name(), fmt.Sprintf("%s/claim-%06d", dir, i)); err != nil {
			b.Fatal(err)
		}
		d, err := os.Open(dir)
		if err != nil {
			b.Fatal(err)
		}
		if err := d.Sync(); err != nil {
			b.Fatal(err)
		}
		_ = d.Close()
	}
}

// BenchmarkClaimCreate is the durable part of a new Start (index entry and claim, see filestore.Store.Create),
// for a client the store has seen before and for a new client (whose index directory is made too).
func BenchmarkClaimCreate(b *testing.B) {
	for _, newClient := range []bool{false, true} {
		name := "same_client"
		if newClient {
			name = "new_client"
		}
		b.Run(name, func(b *testing.B) {
			fs, err := filestore.Open(claimDir(b))
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			minion := newMinionID()
			b.ReportAllocs()
			for b.Loop() {
				if newClient {
					minion = newMinionID()
				}
				c := &claims.Claim{Protocol: claimProtocol, MinionID: minion, RequestID: uuid.NewString(), Profile: receipt.ProfileConfigure,
					Role: "roles.client_stack", JID: "20261129120000000001", Phase: claims.PhaseClaimed, CreatedAt: time.Now().UTC()}
				if err := fs.Create(ctx, c); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkClaimCreateConcurrent: 100 Creates released at once (new clients); ns/op is per Create.
func BenchmarkClaimCreateConcurrent(b *testing.B) {
	fs, err := filestore.Open(claimDir(b))
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	const conc = 100
	b.ReportAllocs()
	for b.Loop() {
		var wg sync.WaitGroup
		for range conc {
			wg.Add(1)
			go func() {
				defer wg.Done()
				c := &claims.Claim{Protocol: claimProtocol, MinionID: newMinionID(), RequestID: uuid.NewString(), Profile: receipt.ProfileConfigure,
					Role: "roles.client_stack", JID: "20261129120000000001", Phase: claims.PhaseClaimed, CreatedAt: time.Now().UTC()}
				if err := fs.Create(ctx, c); err != nil {
					b.Error(err)
				}
			}()
		}
		wg.Wait()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*conc), "ns/create")
}

// BenchmarkStartNewIdle: Start of a new request on an idle dispatcher (claim + worker launch; the worker's
// publication runs in the background and is waited for outside the timer).
func BenchmarkStartNewIdle(b *testing.B) {
	e := startSim(b)
	d := e.dispatcher()
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		m := e.addMinion()
		req := uuid.NewString()
		b.StartTimer()
		if _, err := d.Start(ctx, m.ID(), req, receipt.ProfileConfigure); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		_ = d.Wait(ctx)
		b.StartTimer()
	}
}

// BenchmarkStartToFinal: Start of a new request and its worker to the final result on an idle dispatcher
// (claim, launch, request lock, client lease, preflight, the dispatch intent with its fencing token, the
// one publication, the verified return and the final commit), all timed.
func BenchmarkStartToFinal(b *testing.B) {
	e := startSim(b)
	d := e.dispatcher()
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		m := e.addMinion()
		req := uuid.NewString()
		b.StartTimer()
		if _, err := d.Start(ctx, m.ID(), req, receipt.ProfileConfigure); err != nil {
			b.Fatal(err)
		}
		if err := d.Wait(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkIntentWrite: the worker's fenced transition on filestore.Store alone: a claimed claim moved to
// the dispatch intent under both leases (CompareAndSwapHeld; since fencing, with the client's token made
// durable first). The claim's creation and the leases are outside the timer.
func BenchmarkIntentWrite(b *testing.B) {
	fs, err := filestore.Open(claimDir(b))
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	minion := newMinionID()
	for b.Loop() {
		b.StopTimer()
		c := &claims.Claim{Protocol: claimProtocol, MinionID: minion, RequestID: uuid.NewString(), Profile: receipt.ProfileConfigure,
			Role: "roles.client_stack", JID: "20261129120000000001", Phase: claims.PhaseClaimed, CreatedAt: time.Now().UTC()}
		if err := fs.Create(ctx, c); err != nil {
			b.Fatal(err)
		}
		rl, err := fs.TryRequestLock(ctx, c.RequestID)
		if err != nil {
			b.Fatal(err)
		}
		cl, err := fs.AcquireClientLease(ctx, minion, time.Second)
		if err != nil {
			b.Fatal(err)
		}
		next := c.Clone()
		now := time.Now().UTC()
		next.Phase, next.DispatchedAt = claims.PhaseDispatching, &now
		b.StartTimer()
		if _, err := fs.CompareAndSwapHeld(ctx, next, rl, cl); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		_ = cl.Release()
		_ = rl.Release()
		b.StartTimer()
	}
}
