package saltcmd_test

import (
	"bytes"
	"context"
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/oduflow/oduflow-go/salt"
	"github.com/oduflow/oduflow-go/salt/saltcmd"
	"github.com/oduflow/oduflow-go/salt/salttest"
)

// BenchmarkRun10kMinions is the in-process row of the general client: one run of test.ping
// answered by 10,000 simulated minions. The simulator and the client share the process; the
// simulator really fires each return on its event socket (a unix socket, the frames of Salt's
// master event bus) and the client decodes and accounts for every one. Each round:
//
//   - ours: Run, from the call (subscribe, publish) to the last Result read; every minion must
//     end Returned with success, exactly once, with no duplicate, ignored return or bus gap.
//     returns/s is 10,000 / that time;
//   - the baseline, in the same round: the bytes the simulator sent in a warm-up run (captured
//     by a raw reader on its socket), replayed on a unix socket to salt.SubscribeEvents with
//     saltcmd's options, read until the 10,000th JobReturn: the event stream's own decode rate
//     of the same bytes (decode-returns/s), what any consumer of the bus pays before saltcmd.
//
// cpu-us/return is the process's CPU time (user and system, simulator and client) during ours
// per return: unlike the rates, it does not depend on what else the machine runs.
//
// The heap is the runtime/metrics /memory/classes/heap/objects:bytes (live and not yet swept
// objects, the simulator's included) sampled every millisecond during ours: peak-heap-MiB is
// its high-water mark over all rounds, idle-heap-MiB the live heap after a collection before
// the rounds (mostly the simulator's 10,000 minions), run-heap-MiB the largest peak minus that.
// A published row is the median of -count 5 or more (see BENCHMARKS.md).
func BenchmarkRun10kMinions(b *testing.B) {
	const n = 10000
	m, stopMaster := startBenchMaster(b, salttest.WithEventReaderBuffer(4*n))
	defer stopMaster()
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
	cmd := saltcmd.Cmd{Target: salt.GlobTarget("bench-*"), Fun: "test.ping"}
	stopCapture := captureBus(b, m.EventsAddr())
	runAll(b, c, cmd, n) // warm-up, captured
	captured := stopCapture()
	var ours, decode, cpu time.Duration
	var peak atomic.Uint64
	base := heapInUse()
	b.ResetTimer()
	for range b.N {
		runtime.GC()
		stop, sampled := make(chan struct{}), make(chan struct{})
		go samplePeakHeap(&peak, stop, sampled)
		cpu0 := cpuTime()
		ours += runAll(b, c, cmd, n)
		cpu += cpuTime() - cpu0
		close(stop)
		<-sampled
		decode += decodeReplay(b, captured, n)
	}
	b.StopTimer()
	b.ReportMetric(float64(n*b.N)/ours.Seconds(), "returns/s")
	b.ReportMetric(float64(n*b.N)/decode.Seconds(), "decode-returns/s")
	b.ReportMetric(float64(cpu.Microseconds())/float64(n*b.N), "cpu-us/return")
	b.ReportMetric(float64(peak.Load())/(1<<20), "peak-heap-MiB")
	b.ReportMetric(float64(base)/(1<<20), "idle-heap-MiB")
	b.ReportMetric(float64(peak.Load()-min(peak.Load(), base))/(1<<20), "run-heap-MiB")
	b.ReportMetric(0, "ns/op") // a round is two measurements: the rates above are the result
}

// startBenchMaster starts a simulator that stop closes. Not startMaster: a closure given to
// b.Cleanup stays reachable from b after it ran, and with it a closed simulator's 10,000
// minions, in the next invocation's heap figures.
func startBenchMaster(b *testing.B, opts ...salttest.Option) (m *salttest.Master, stop func()) {
	b.Helper()
	dir, err := os.MkdirTemp("", "sc") // short: the event socket path is limited to 107 bytes
	if err != nil {
		b.Fatal(err)
	}
	m, err = salttest.Start(context.Background(), append([]salttest.Option{salttest.WithDir(dir)}, opts...)...)
	if err != nil {
		_ = os.RemoveAll(dir)
		b.Fatal(err)
	}
	return m, func() {
		_ = m.Close()
		_ = os.RemoveAll(dir)
	}
}

// runAll runs cmd and checks that each of the n minions returned with success exactly once,
// with nothing ignored, duplicated or lost on the bus; it returns the time from the call to the
// last Result read.
func runAll(b *testing.B, c *saltcmd.Client, cmd saltcmd.Cmd, n int) time.Duration {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	start := time.Now()
	job, err := c.Run(ctx, cmd)
	if err != nil {
		b.Fatal(err)
	}
	got := 0
	for r := range job.Results() {
		if r.OK() {
			got++
		}
	}
	took := time.Since(start)
	sum := job.Wait()
	if got != n || sum.Returned != n || len(job.Minions()) != n || sum.Duplicates != 0 || sum.Ignored != 0 ||
		len(sum.Gaps) != 0 {
		b.Fatalf("%d of %d minions returned with success (summary: %d returned, %d duplicates, %d ignored, gaps %v)",
			got, n, sum.Returned, sum.Duplicates, sum.Ignored, sum.Gaps)
	}
	return took
}

// captureBus connects a raw reader to the event bus at addr (unix://) and returns a function
// that stops it and returns every byte it read: the wire as the simulator wrote it.
func captureBus(b *testing.B, addr string) func() []byte {
	b.Helper()
	conn, err := net.Dial("unix", strings.TrimPrefix(addr, "unix://"))
	if err != nil {
		b.Fatal(err)
	}
	var buf bytes.Buffer
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = io.Copy(&buf, conn)
	}()
	return func() []byte {
		// the run is over when this is called; the bytes still on their way arrive well within this
		_ = conn.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
		<-done
		_ = conn.Close()
		return buf.Bytes()
	}
}

// decodeReplay serves frames on a new unix socket, reads them with salt.SubscribeEvents (with
// the options saltcmd subscribes with) until n job returns arrived, and returns the time from
// the subscription to the n-th return.
func decodeReplay(b *testing.B, frames []byte, n int) time.Duration {
	b.Helper()
	dir, err := os.MkdirTemp("", "dr")
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = os.RemoveAll(dir) }()
	path := filepath.Join(dir, "bus.ipc")
	ln, err := net.Listen("unix", path)
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = ln.Close() }()
	go func() {
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		defer func() { _ = conn.Close() }()
		if _, err := conn.Write(frames); err != nil {
			return
		}
		_, _ = conn.Read(make([]byte, 1)) // until the reader hangs up
	}()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	start := time.Now()
	s, err := salt.SubscribeEvents(ctx, "unix://"+path, salt.WithEventBuffer(16384, 48<<20),
		salt.WithTagPrefixes("salt/job/", "salt/run/"))
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = s.Close() }()
	got := 0
	for ev := range s.Events() {
		if ev.Gap != nil {
			b.Fatalf("gap while decoding the captured bytes: %+v", *ev.Gap)
		}
		if ev.JobReturn != nil {
			if got++; got == n {
				return time.Since(start)
			}
		}
	}
	b.Fatalf("the captured bytes hold %d of %d returns", got, n)
	return 0
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
	m, stopMaster := startBenchMaster(b)
	defer stopMaster()
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

// cpuTime is the process's CPU time so far (user and system: the simulator's and the client's).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// heapInUse is the live heap after a collection: the simulator's idle fleet before a run.
func heapInUse() uint64 {
	runtime.GC()
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}
