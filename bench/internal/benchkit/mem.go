package benchkit

import (
	"bufio"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
)

const mib = 1 << 20

// MemReport is where a process's memory is while n requests are held: the Go runtime's own accounting
// (heap in use, goroutine stacks, runtime overhead), the kernel's (VmRSS, VmHWM) and the goroutine count,
// each also divided by the requests held, so a regression names its cause.
type MemReport struct {
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

// ReadMem measures after a GC so the live heap, not garbage, is what is divided by n; heapProfile, when
// set, also gets a heap profile (go tool pprof -sample_index=inuse_space).
func ReadMem(n int, heapProfile string) MemReport {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	r := MemReport{
		Goroutines:     runtime.NumGoroutine(),
		HeapInuseMB:    Round3(float64(ms.HeapInuse) / mib),
		HeapAllocMB:    Round3(float64(ms.HeapAlloc) / mib),
		StackInuseMB:   Round3(float64(ms.StackInuse) / mib),
		RuntimeOtherMB: Round3(float64(ms.MSpanInuse+ms.MCacheInuse+ms.BuckHashSys+ms.GCSys+ms.OtherSys) / mib),
		SysMB:          Round3(float64(ms.Sys) / mib),
		NumGC:          ms.NumGC,
	}
	if st, err := ProcStatus(); err == nil {
		r.VmRSSMB, r.VmHWMMB = Round3(st["VmRSS"]/1024), Round3(st["VmHWM"]/1024)
	}
	if n > 0 {
		r.PerRequestB.Heap = Round3(float64(ms.HeapInuse) / float64(n))
		r.PerRequestB.Stack = Round3(float64(ms.StackInuse) / float64(n))
		r.PerRequestB.RSS = Round3(r.VmRSSMB * mib / float64(n))
	}
	if heapProfile != "" {
		if f, err := os.Create(heapProfile); err == nil {
			_ = pprof.WriteHeapProfile(f)
			_ = f.Close()
		}
	}
	return r
}

// LiveHeap is the live heap after two collections and the goroutine stacks in use, bytes.
func LiveHeap() (heap, stacks uint64) {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc, ms.StackInuse
}

// ProcStatus reads the kB fields of /proc/self/status (VmRSS, VmHWM, ...), in kB.
func ProcStatus() (map[string]float64, error) {
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
		if num, ok := strings.CutSuffix(strings.TrimSpace(v), " kB"); ok {
			if x, err := strconv.ParseFloat(num, 64); err == nil {
				out[k] = x
			}
		}
	}
	return out, sc.Err()
}

// ProcStatusMiB is one kB field of /proc/self/status (VmHWM: the peak resident set, VmRSS: the
// current one) in MiB, rounded to three decimals.
func ProcStatusMiB(field string) (float64, error) {
	st, err := ProcStatus()
	if err != nil {
		return 0, err
	}
	kb, ok := st[field]
	if !ok {
		return 0, fmt.Errorf("no %s in /proc/self/status", field)
	}
	return Round3(kb / 1024), nil
}
