package safefile

import (
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkLockPoolProbeWhileLocking: a pool holding 10,000 ranges (a dispatcher with 10,000 requests in
// flight holds twice as many); one goroutine takes and releases other locks without pause (the workers'
// request locks and leases) while the benchmark asks Held and IsLocked of a held lock (a lease check, a
// Status probe). Reported: ns per probe, and the probe's p99 (probe_p99_us). The kernel walks every range
// on each lock and unlock; a probe that waits for the pool's mutex waits for that walk.
//
//	go test -run '^$' -bench LockPoolProbe -benchtime 20000x -count 5 ./internal/safefile/
func BenchmarkLockPoolProbeWhileLocking(b *testing.B) {
	s, err := OpenStore(filepath.Join(b.TempDir(), "receipts"), WithCreate())
	if err != nil {
		b.Fatal(err)
	}
	p, err := s.OpenLockPool()
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	const held = 10000
	for i := range held {
		if _, err := p.TryLock(fmt.Sprintf("held-%d", i)); err != nil {
			b.Fatal(err)
		}
	}
	probe, err := p.TryLock("probe")
	if err != nil {
		b.Fatal(err)
	}
	for i := range 64 { // the churn's lock files exist before the clock starts
		l, err := p.TryLock(fmt.Sprintf("churn-%d", i))
		if err != nil {
			b.Fatal(err)
		}
		_ = l.Release()
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; !stop.Load(); i++ {
			if l, err := p.TryLock(fmt.Sprintf("churn-%d", i%64)); err == nil {
				_ = l.Release()
			}
		}
	}()
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		t := time.Now()
		if !probe.Held() {
			b.Fatal("probe lock not held")
		}
		if ok, err := p.IsLocked("probe"); err != nil || !ok {
			b.Fatal(ok, err)
		}
		lat = append(lat, time.Since(t))
	}
	b.StopTimer()
	stop.Store(true)
	wg.Wait()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "probe_p99_us")
}
