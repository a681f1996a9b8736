package benchkit

import (
	"bytes"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"sort"
	"strings"
	"sync"
	"time"
)

// StartCPUProfile starts a CPU profile of this process written to path and returns the function that
// stops it and closes the file (calling it again does nothing); an empty path profiles nothing.
func StartCPUProfile(path string) (stop func(), err error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		_ = f.Close()
		return nil, err
	}
	return sync.OnceFunc(func() {
		pprof.StopCPUProfile()
		_ = f.Close()
	}), nil
}

// StartContentionProfiles turns on the runtime's mutex and block profiles (every event: rate 1) when
// their paths are set and returns the function that writes them and turns them off again.
func StartContentionProfiles(mutexPath, blockPath string) (stop func()) {
	if mutexPath != "" {
		runtime.SetMutexProfileFraction(1)
	}
	if blockPath != "" {
		runtime.SetBlockProfileRate(1)
	}
	return sync.OnceFunc(func() {
		write := func(name, path string) {
			if path == "" {
				return
			}
			if f, err := os.Create(path); err == nil {
				_ = pprof.Lookup(name).WriteTo(f, 0)
				_ = f.Close()
			}
		}
		write("mutex", mutexPath)
		write("block", blockPath)
		runtime.SetMutexProfileFraction(0)
		runtime.SetBlockProfileRate(0)
	})
}

// WaitSampler samples where this process's goroutines are every interval until stopped, and writes to
// path the stacks (the goroutine profile's text form, debug=1) summed over the samples, most frequent
// first: what the goroutines waited on, weighted by how long.
func WaitSampler(path string, interval time.Duration) (stop func()) {
	if path == "" {
		return func() {}
	}
	done := make(chan struct{})
	finished := make(chan struct{})
	counts := map[string]int{}
	nSamples := 0
	go func() {
		defer close(finished)
		tk := time.NewTicker(interval)
		defer tk.Stop()
		for {
			select {
			case <-done:
				return
			case <-tk.C:
			}
			var b bytes.Buffer
			if err := pprof.Lookup("goroutine").WriteTo(&b, 1); err != nil {
				continue
			}
			nSamples++
			for _, rec := range strings.Split(b.String(), "\n\n") {
				head, stack, ok := strings.Cut(rec, "\n")
				var n int
				if _, err := fmt.Sscanf(head, "%d @", &n); err != nil || !ok {
					continue
				}
				counts[stack] += n
			}
		}
	}()
	return sync.OnceFunc(func() {
		close(done)
		<-finished
		type kv struct {
			stack string
			n     int
		}
		var all []kv
		total := 0
		for k, v := range counts {
			all = append(all, kv{k, v})
			total += v
		}
		sort.Slice(all, func(i, j int) bool { return all[i].n > all[j].n })
		var b bytes.Buffer
		fmt.Fprintf(&b, "%d samples every %v, %d goroutine-samples\n\n", nSamples, interval, total)
		for _, e := range all {
			fmt.Fprintf(&b, "%d (%.1f%%, %.1f goroutines on average)\n%s\n\n", e.n, 100*float64(e.n)/float64(max(total, 1)),
				float64(e.n)/float64(max(nSamples, 1)), e.stack)
		}
		_ = os.WriteFile(path, b.Bytes(), 0o644)
	})
}
