package benchsim

import (
	"context"
	"flag"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/oduflow/oduflow-go/oduflow"
	"github.com/oduflow/oduflow-go/receipt"
)

// Starts is what StartHeld did: the request ids (the i-th for MinionID(i)), when the callers began, when
// the last Start returned, how long all of them took, and (timed) each Start's latency.
type Starts struct {
	Requests []string
	Latency  []time.Duration // nil unless timed
	Began    time.Time
	Last     time.Time
	Took     time.Duration
}

// StartHeld starts a configure request of a new id for each of the held minions 0..n-1 on d, from conc
// concurrent callers, and returns at the first error or when every Start has returned. timed also
// records each Start's latency (n more durations on the heap).
func StartHeld(ctx context.Context, d *oduflow.Dispatcher, n, conc int, timed bool) (Starts, error) {
	s := Starts{Requests: make([]string, n)}
	for i := range s.Requests {
		s.Requests[i] = uuid.NewString()
	}
	if timed {
		s.Latency = make([]time.Duration, n)
	}
	var next, last atomic.Int64
	var wg sync.WaitGroup
	errc := make(chan error, conc)
	s.Began = time.Now()
	for range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				t := time.Now()
				if _, err := d.Start(ctx, MinionID(i), s.Requests[i], receipt.ProfileConfigure); err != nil {
					errc <- err
					return
				}
				e := time.Now()
				if timed {
					s.Latency[i] = e.Sub(t)
				}
				for {
					l := last.Load()
					if e.UnixNano() <= l || last.CompareAndSwap(l, e.UnixNano()) {
						break
					}
				}
			}
		}()
	}
	wg.Wait()
	s.Took = time.Since(s.Began)
	close(errc)
	if err := <-errc; err != nil {
		return s, err
	}
	s.Last = time.Unix(0, last.Load())
	return s, nil
}

// HeldFlags are the flags both in-flight rows take: how many requests to hold, from how many concurrent
// Start callers, where the data under measurement live, and how long to wait for the last publication.
type HeldFlags struct {
	N                int
	StartConcurrency int
	Dir              string
	PublishWait      time.Duration
}

// InflightFlags is the flag set of an in-flight row, with the HeldFlags registered (n requests by
// default; dirOf names what -dir holds); the row adds its own.
func InflightFlags(n int, dirOf string) (*flag.FlagSet, *HeldFlags) {
	fs := flag.NewFlagSet("inflight", flag.ContinueOnError)
	f := &HeldFlags{}
	fs.IntVar(&f.N, "n", n, "requests in flight")
	fs.IntVar(&f.StartConcurrency, "start-concurrency", 64, "concurrent Start callers")
	fs.StringVar(&f.Dir, "dir", "/var/cache", "parent of the "+dirOf)
	fs.DurationVar(&f.PublishWait, "publish-wait", 5*time.Minute, "how long to wait for the last publication")
	return fs, f
}
