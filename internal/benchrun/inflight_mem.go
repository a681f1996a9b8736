package main

import (
	"bufio"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
)

// memReport is where the dispatcher's memory is while n requests are held: the Go runtime's own
// accounting (heap in use, goroutine stacks, runtime overhead), the kernel's (VmRSS, VmHWM) and the
// goroutine count, each also divided by the requests held, so a regression names its cause.
type memReport struct {
	Goroutines     int     `json:"goroutines"`
	HeapInuseMB    float64 `json:"heap_inuse_mb"`
	HeapAllocMB    float64 `json:"heap_alloc_mb"`
	StackInuseMB   float64 `json:"stack_inuse_mb"`
	RuntimeOtherMB float64 `json:"runtime_other_mb"` // spans, GC metadata, buckets, other Sys
	SysMB          float64 `json:"sys_mb"`
	NumGC          uint32  `json:"num_gc"`
	VmRSSMB        float64 `json:"vm_rss_mb"`
	VmHWMMB        float64 `json:"vm_hwm_mb"`
	PerRequestB    struct {
		Heap  float64 `json:"heap"`
		Stack float64 `json:"stack"`
		RSS   float64 `json:"rss"`
	} `json:"per_request_bytes"`
}

const mb = 1 << 20

// readMem measures after a GC so the live heap, not garbage, is what is divided by n; heapProfile, when
// set, also gets a heap profile (go tool pprof -sample_index=inuse_space).
func readMem(n int, heapProfile string) memReport {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	r := memReport{
		Goroutines:   runtime.NumGoroutine(),
		HeapInuseMB:  round3(float64(ms.HeapInuse) / mb),
		HeapAllocMB:  round3(float64(ms.HeapAlloc) / mb),
		StackInuseMB: round3(float64(ms.StackInuse) / mb),
		RuntimeOtherMB: round3(float64(ms.MSpanInuse+ms.MCacheInuse+ms.BuckHashSys+ms.GCSys+ms.OtherSys) /
			mb),
		SysMB: round3(float64(ms.Sys) / mb),
		NumGC: ms.NumGC,
	}
	if st, err := procStatus(); err == nil {
		r.VmRSSMB, r.VmHWMMB = round3(st["VmRSS"]/1024), round3(st["VmHWM"]/1024)
	}
	if n > 0 {
		r.PerRequestB.Heap = round3(float64(ms.HeapInuse) / float64(n))
		r.PerRequestB.Stack = round3(float64(ms.StackInuse) / float64(n))
		r.PerRequestB.RSS = round3(r.VmRSSMB * mb / float64(n))
	}
	if heapProfile != "" {
		if f, err := os.Create(heapProfile); err == nil {
			_ = pprof.WriteHeapProfile(f)
			_ = f.Close()
		}
	}
	return r
}

// procStatus reads the kB fields of /proc/self/status.
func procStatus() (map[string]float64, error) {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		v = strings.TrimSpace(v)
		if num, ok := strings.CutSuffix(v, " kB"); ok {
			if x, err := strconv.ParseFloat(num, 64); err == nil {
				out[k] = x
			}
		}
	}
	return out, sc.Err()
}
