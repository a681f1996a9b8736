package saltcmd_test

import (
	"runtime"
	"runtime/metrics"
	"sync/atomic"
	"testing"
	"time"

	"github.com/oduflow/oduflow-go/salt"
	"github.com/oduflow/oduflow-go/salt/saltcmd"
	"github.com/oduflow/oduflow-go/salt/salttest"
)

// BenchmarkRun10kMinions: one run of test.ping answered by 10,000 simulated minions over real
// sockets (request port and unix event bus), publish to last return. Reports returns/s and the
// peak heap in use during the run (sampled every millisecond; the simulator runs in the same
// process: idle-heap-MiB is its fleet's heap before the run).
func BenchmarkRun10kMinions(b *testing.B) {
	const n = 10000
	m := startMaster(b, salttest.WithEventReaderBuffer(4*n))
	pub, err := salt.NewClient(m.Addr(), salt.WithAuth(salt.UserKey("root", m.KeyFile())))
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = pub.Close() }()
	c, err := saltcmd.New(pub, m.EventsAddr(), saltcmd.WithTimeouts(30*time.Second, 10*time.Second))
	if err != nil {
		b.Fatal(err)
	}
	m.AddFleet("bench", n, nil)
	var total time.Duration
	var peak atomic.Uint64
	base := heapInUse()
	b.ResetTimer()
	for range b.N {
		runtime.GC()
		stop := make(chan struct{})
		sampled := make(chan struct{})
		go samplePeakHeap(&peak, stop, sampled)
		start := time.Now()
		job, err := c.Run(ctxFor(b, time.Minute), saltcmd.Cmd{Target: salt.GlobTarget("bench-*"), Fun: "test.ping"})
		if err != nil {
			b.Fatal(err)
		}
		got := 0
		for r := range job.Results() {
			if r.OK() {
				got++
			}
		}
		total += time.Since(start)
		close(stop)
		<-sampled
		if got != n {
			b.Fatalf("%d of %d minions returned", got, n)
		}
	}
	b.ReportMetric(float64(n*b.N)/total.Seconds(), "returns/s")
	b.ReportMetric(float64(peak.Load())/(1<<20), "peak-heap-MiB")
	b.ReportMetric(float64(base)/(1<<20), "idle-heap-MiB")
}

func samplePeakHeap(peak *atomic.Uint64, stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	t := time.NewTicker(time.Millisecond)
	defer t.Stop()
	for {
		metrics.Read(s)
		if v := s[0].Value.Uint64(); v > peak.Load() {
			peak.Store(v)
		}
		select {
		case <-stop:
			return
		case <-t.C:
		}
	}
}

// BenchmarkCollect10kReturns isolates the client: 10,000 frozen simulated minions receive one
// test.ping publish through the simulator's request port, and a replay bus (a unix socket
// serving the simulator's frame format) writes their 10,000 returns, encoded beforehand, as
// fast as the socket takes them. Reports returns/s from the first to the last return (what
// the client can absorb), publish-to-last-return returns/s, and the peak heap.
func BenchmarkCollect10kReturns(b *testing.B) {
	const n = 10000
	m := startMaster(b)
	ids := m.AddFleet("bench", n, func(int) salttest.MinionBehavior { return salttest.MinionBehavior{Frozen: true} })
	pub, err := salt.NewClient(m.Addr(), salt.WithAuth(salt.UserKey("root", m.KeyFile())))
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = pub.Close() }()
	replay := startReplayBus(b, m, ids)
	c, err := saltcmd.New(pub, replay.addr, saltcmd.WithTimeouts(30*time.Second, 10*time.Second))
	if err != nil {
		b.Fatal(err)
	}
	var firstToLast, publishToLast time.Duration
	var peak atomic.Uint64
	base := heapInUse()
	b.ResetTimer()
	for range b.N {
		runtime.GC()
		stop, sampled := make(chan struct{}), make(chan struct{})
		go samplePeakHeap(&peak, stop, sampled)
		start := time.Now()
		job, err := c.Run(ctxFor(b, time.Minute), saltcmd.Cmd{Target: salt.GlobTarget("bench-*"), Fun: "test.ping"})
		if err != nil {
			b.Fatal(err)
		}
		got := 0
		var first time.Time
		for r := range job.Results() {
			if got == 0 {
				first = time.Now()
			}
			if r.OK() {
				got++
			}
		}
		firstToLast += time.Since(first)
		publishToLast += time.Since(start)
		close(stop)
		<-sampled
		if got != n {
			b.Fatalf("%d of %d minions returned", got, n)
		}
	}
	b.ReportMetric(float64(n*b.N)/firstToLast.Seconds(), "returns/s")
	b.ReportMetric(float64(n*b.N)/publishToLast.Seconds(), "publish-to-last-returns/s")
	b.ReportMetric(float64(peak.Load())/(1<<20), "peak-heap-MiB")
	b.ReportMetric(float64(base)/(1<<20), "idle-heap-MiB")
}

// heapInUse is the live heap after a collection: the simulator's idle fleet before a run.
func heapInUse() uint64 {
	runtime.GC()
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}
