package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/oduflow/oduflow-go/salt"
	"github.com/oduflow/oduflow-go/salt/saltcmd"
	"github.com/oduflow/oduflow-go/salt/salttest"
)

// inprocRow is the in-process row (no lab): the simulator (salttest) with a fleet of n minions
// and the client in this process. The simulator really fires each return on its event socket (a
// unix socket, the frames of Salt's master event bus); the client decodes and accounts for every
// one. After one warm-up round, which a raw reader on the socket captures, each round measures:
//
//   - ours: Run of test.ping, from the call (subscribe, publish) to the last Result read; every
//     minion must end Returned with success exactly once, with no duplicate, ignored return or
//     bus gap. returns/s = n / that time; the process's CPU time (user+sys, simulator included)
//     per return; the heap (runtime/metrics /memory/classes/heap/objects:bytes, live and not yet
//     swept objects, the simulator's included) sampled every millisecond: its peak, and the peak
//     minus the live heap after a collection before the round (the run's own share);
//   - the baseline, right after: the captured bytes replayed on a unix socket to
//     salt.SubscribeEvents with saltcmd's options, read until the n-th JobReturn: the event
//     stream's own decode rate of the same bytes.
func inprocRow(rep *report, n, rounds int) error {
	row := fmt.Sprintf("inprocess_%d", n)
	if n%1000 == 0 {
		row = fmt.Sprintf("inprocess_%dk", n/1000)
	}
	fmt.Fprintf(stderr, "clientbench: %s, %d rounds\n", row, rounds)
	dir, err := os.MkdirTemp("", "cb")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	ctx := context.Background()
	m, err := salttest.Start(ctx, salttest.WithDir(dir), salttest.WithEventReaderBuffer(4*n))
	if err != nil {
		return err
	}
	defer func() { _ = m.Close() }()
	pub, err := salt.NewClient(m.Addr(), salt.WithAuth(salt.UserKey("root", m.KeyFile())))
	if err != nil {
		return err
	}
	defer func() { _ = pub.Close() }()
	c, err := saltcmd.New(pub, m.EventsAddr(), saltcmd.WithTimeouts(30*time.Second, 10*time.Second))
	if err != nil {
		return err
	}
	m.AddFleet("bench", n, nil)
	cmd := saltcmd.Cmd{Target: salt.GlobTarget("bench-*"), Fun: "test.ping"}
	stop, err := captureBus(m.EventsAddr())
	if err != nil {
		return err
	}
	if _, err := runAll(c, cmd, n); err != nil {
		return fmt.Errorf("%s warm-up: %w", row, err)
	}
	captured := stop()
	for round := range rounds {
		idle := heapInUse()
		var peak atomic.Uint64
		done, sampled := make(chan struct{}), make(chan struct{})
		go samplePeakHeap(&peak, done, sampled)
		cpu0 := cpuTime()
		took, err := runAll(c, cmd, n)
		cpu := cpuTime() - cpu0
		close(done)
		<-sampled
		if err != nil {
			return fmt.Errorf("%s round %d: %w", row, round, err)
		}
		decode, err := decodeReplay(captured, n, dir)
		if err != nil {
			return fmt.Errorf("%s round %d baseline: %w", row, round, err)
		}
		rep.add(row, map[string]float64{
			"ours_returns_per_s":   float64(n) / took.Seconds(),
			"decode_returns_per_s": float64(n) / decode.Seconds(),
			"cpu_us_per_return":    float64(cpu.Microseconds()) / float64(n),
			"peak_heap_mib":        float64(peak.Load()) / (1 << 20),
			"idle_heap_mib":        float64(idle) / (1 << 20),
			"run_heap_mib":         float64(peak.Load()-min(peak.Load(), idle)) / (1 << 20),
		})
	}
	return nil
}

// runAll runs cmd and checks that each of the n minions returned with success exactly once,
// with nothing ignored, duplicated or lost on the bus; it returns the time from the call to the
// last Result read.
func runAll(c *saltcmd.Client, cmd saltcmd.Cmd, n int) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	start := time.Now()
	job, err := c.Run(ctx, cmd)
	if err != nil {
		return 0, err
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
		return 0, fmt.Errorf("%d of %d minions returned with success (summary: %d returned, %d duplicates, %d ignored, %d gaps)",
			got, n, sum.Returned, sum.Duplicates, sum.Ignored, len(sum.Gaps))
	}
	return took, nil
}

// captureBus connects a raw reader to the event bus at addr (unix://); stop ends it and
// returns every byte it read: the wire as the simulator wrote it.
func captureBus(addr string) (stop func() []byte, err error) {
	conn, err := net.Dial("unix", strings.TrimPrefix(addr, "unix://"))
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = io.Copy(&buf, conn)
	}()
	return func() []byte {
		// the run is over: the bytes still on their way arrive well within this
		_ = conn.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
		<-done
		_ = conn.Close()
		return buf.Bytes()
	}, nil
}

// decodeReplay serves frames on a new unix socket in dir, reads them with salt.SubscribeEvents
// (with the options saltcmd subscribes with) until n job returns arrived, and returns the time
// from the subscription to the n-th return.
func decodeReplay(frames []byte, n int, dir string) (time.Duration, error) {
	path := filepath.Join(dir, "replay.ipc")
	_ = os.Remove(path)
	ln, err := net.Listen("unix", path)
	if err != nil {
		return 0, err
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
		return 0, err
	}
	defer func() { _ = s.Close() }()
	got := 0
	for ev := range s.Events() {
		if ev.Gap != nil {
			return 0, fmt.Errorf("gap while decoding the captured bytes: %s", ev.Gap.Reason)
		}
		if ev.JobReturn != nil {
			if got++; got == n {
				return time.Since(start), nil
			}
		}
	}
	return 0, fmt.Errorf("the captured bytes hold %d of %d returns", got, n)
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

// heapInUse is the live heap after a collection.
func heapInUse() uint64 {
	runtime.GC()
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// cpuTime is the process's CPU time so far (user and system).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
