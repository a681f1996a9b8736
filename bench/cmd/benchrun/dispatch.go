package main

import (
	"context"
	"flag"
	"os"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/oduflow/oduflow-go/bench/internal/benchkit"
	"github.com/oduflow/oduflow-go/bench/internal/benchsim"
	"github.com/oduflow/oduflow-go/oduflow"
	"github.com/oduflow/oduflow-go/oduflow/oduflowtest/fakeminion"
	"github.com/oduflow/oduflow-go/receipt"
	"github.com/oduflow/oduflow-go/salt"
)

// claimDir makes a fresh claim directory (mode 0700) inside base: the file system whose fsync floor
// the anchor measures.
func claimDir(base string) (string, func(), error) { return claimDirLeft(base, false) }

// claimDirLeft is claimDir; with leave set the directory is left in place for the caller (bench.sh) to
// remove after the whole run. On this machine's ext4 without a journal, each inode allocated within about
// 30 s of many removals scans past the recently freed inodes (ext4's recently_deleted check): removing a
// round's 10,000 claims (about 130,000 files) right before the next round made that round pay for the
// last one's cleanup, and the rounds of one run got slower one after the other.
func claimDirLeft(base string, leave bool) (string, func(), error) {
	dir, err := os.MkdirTemp(base, "oduflow-bench-")
	if err != nil {
		return "", nil, err
	}
	if leave {
		return dir, func() {}, nil
	}
	return dir, func() { _ = os.RemoveAll(dir) }, nil
}

func newMinionID() string { return "client-" + uuid.NewString() }

// cmdStartIdle: (1) n sequential Starts of new requests for new clients on an idle dispatcher (claim +
// worker launch; the worker's run is waited for outside the timed Start), (1b) the same for new requests
// of one known client, (2) `concurrent` Starts released at
// once on fresh minions: wall time of the batch / concurrent = the per-Start cost under concurrency.
func cmdStartIdle(ctx context.Context, args []string) (any, error) {
	fs := flag.NewFlagSet("start_idle", flag.ContinueOnError)
	n := fs.Int("n", 200, "sequential Starts")
	conc := fs.Int("concurrent", 100, "concurrent Starts")
	base := fs.String("dir", "/var/cache", "claim directory parent")
	leave := fs.Bool("leave-dir", false, "leave the claim directories for the caller to remove (see claimDirLeft)")
	cpuProfile := fs.String("cpu-profile", "", "write a CPU profile of the concurrent batch here")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	sim, stopSim, err := benchsim.StartInProcess(ctx)
	if err != nil {
		return nil, err
	}
	defer stopSim()
	c, err := benchsim.NewClient(sim.Addr(), sim.KeyFile())
	if err != nil {
		return nil, err
	}
	defer c.Close()
	dir, rm, err := claimDirLeft(*base, *leave)
	if err != nil {
		return nil, err
	}
	defer rm()
	d, err := oduflow.New(c, oduflow.SaltEvents(sim.EventsAddr(), salt.WithLogger(benchkit.Discard())),
		oduflow.WithClaimDir(dir), oduflow.WithPKIDir(sim.PKIDir()), oduflow.WithLogger(benchkit.Discard()))
	if err != nil {
		return nil, err
	}
	defer func() { _ = d.Close(context.Background()) }() // its requests are final by then
	addMinion := func() string {
		m := fakeminion.NewModel(newMinionID())
		if err := fakeminion.Add(sim, m); err != nil {
			panic(err) // a temp pki dir that cannot be written: nothing to measure
		}
		return m.ID()
	}
	// timeStarts times n sequential Starts (after 5 warm-up ones) of new requests for minion(); each
	// waits for the previous request's worker to end, so the client lease is free and nothing
	// quarantines a reused client.
	timeStarts := func(minion func() string) ([]time.Duration, error) {
		var out []time.Duration
		for i := 0; i < *n+5; i++ {
			id, req := minion(), uuid.NewString()
			t0 := time.Now()
			if _, err := d.Start(ctx, id, req, receipt.ProfileConfigure); err != nil {
				return nil, err
			}
			dt := time.Since(t0)
			if err := d.Wait(ctx); err != nil {
				return nil, err
			}
			if i >= 5 {
				out = append(out, dt)
			}
		}
		return out, nil
	}
	seq, err := timeStarts(addMinion)
	if err != nil {
		return nil, err
	}
	// A new request for a client the store already knows (the common case in a fleet: its index
	// directory exists, so no directory is created or synced).
	known := addMinion()
	seqKnown, err := timeStarts(func() string { return known })
	if err != nil {
		return nil, err
	}
	ids := make([]string, *conc)
	for i := range ids {
		ids[i] = addMinion()
	}
	gate := make(chan struct{})
	lat := make([]time.Duration, *conc)
	errs := make(chan error, *conc)
	var wg sync.WaitGroup
	for i := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-gate
			t0 := time.Now()
			if _, err := d.Start(ctx, ids[i], uuid.NewString(), receipt.ProfileConfigure); err != nil {
				errs <- err
			}
			lat[i] = time.Since(t0)
		}()
	}
	time.Sleep(10 * time.Millisecond)
	stopProfile, err := benchkit.StartCPUProfile(*cpuProfile)
	if err != nil {
		return nil, err
	}
	t0 := time.Now()
	close(gate)
	wg.Wait()
	batch := time.Since(t0)
	stopProfile()
	close(errs)
	if err := <-errs; err != nil {
		return nil, err
	}
	if err := d.Wait(ctx); err != nil {
		return nil, err
	}
	return map[string]any{"start_idle_us": benchkit.Summarize(seq, time.Microsecond),
		"start_known_client_us": benchkit.Summarize(seqKnown, time.Microsecond),
		"concurrent":            *conc, "concurrent_batch_ms": benchkit.Round3(float64(batch) / 1e6),
		"concurrent_per_start_us": benchkit.Round3(float64(batch) / float64(*conc) / 1e3),
		"concurrent_latency_us":   benchkit.Summarize(lat, time.Microsecond)}, nil
}
