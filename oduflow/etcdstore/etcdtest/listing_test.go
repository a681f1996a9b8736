package etcdtest

import (
	"bytes"
	"context"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/oduflow/oduflow-go/oduflow/claims"
	"github.com/oduflow/oduflow-go/receipt"
)

// TestHostileClaimsAllocationBounded: 64 hostile 1.4 MiB claims under one client (claim, index and
// open entries written around the store, at the size etcd accepts by default). Listing the client ends
// with ErrCorruptClaim and allocates a bounded amount in the client: the member runs in a process of
// its own, so runtime.MemStats counts this process (the dispatcher's side) only. Before the fix
// ListByClient received and decoded every record (about 450 MiB allocated with the member in-process,
// over 200 MiB in the client alone) before the size cap rejected them; Quarantine read them all too.
func TestHostileClaimsAllocationBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 90 MiB to a member")
	}
	ctx := context.Background()
	endpoint := startMemberProcess(t)
	st := openStores(t, []string{endpoint}, "/hostile", 1, windowsOf(attackTimers()))[0]
	minion := newMinion()
	big := bytes.Repeat([]byte("x"), 1400<<10)
	hostile := 64
	if raceEnabled {
		hostile = 16 // still 22 MiB in one batch's answer; a race-instrumented member writes slowly
	}
	g := newLimited(8)
	for range hostile {
		req := receipt.NewRequestID()
		g.Go(func() error {
			cli := st.Client()
			for _, k := range []string{"/clients/" + minion + "/" + req, "/open/" + minion + "/" + req} {
				if _, err := cli.Put(ctx, st.Prefix()+k, ""); err != nil {
					return err
				}
			}
			_, err := cli.Put(ctx, st.Prefix()+"/claims/"+req, string(big))
			return err
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	big = nil
	m := newMinion()
	d := fakeDispatcher(t, st, &fakeMaster{runs: make(map[string]int)}, m)
	const budget = 24 << 20
	for name, list := range map[string]func() error{
		"ListByClient":   func() error { _, err := st.ListByClient(ctx, minion); return err },
		"ListUnresolved": func() error { _, err := st.ListUnresolved(ctx, minion); return err },
		"Quarantine":     func() error { _, err := d.Quarantine(ctx, minion); return err },
	} {
		_ = list() // warm up connections and caches
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		err := list()
		runtime.ReadMemStats(&after)
		alloc := after.TotalAlloc - before.TotalAlloc
		t.Logf("%s over 64 x 1.4 MiB hostile claims: %.1f MiB allocated (%v)", name, float64(alloc)/(1<<20), err)
		if !errors.Is(err, claims.ErrCorruptClaim) {
			t.Errorf("%s: %v, want ErrCorruptClaim", name, err)
		}
		if alloc > budget {
			t.Errorf("%s allocated %d MiB, budget %d MiB", name, alloc>>20, budget>>20)
		}
	}
}

// TestListUnderCompaction: a client with a 3,000-claim history (300 under the race detector) is listed
// while the cluster is compacted at its current revision every 20 ms. Before the fix every attempt of ListByClient read its batches at
// the index read's revision, which the compaction removed before the 47 batches were read: three
// attempts in a row failed and every Start of that client ended claim_store_unreadable. Now a batch
// whose revision was compacted is read at the latest one, and the listing completes.
func TestListUnderCompaction(t *testing.T) {
	if testing.Short() {
		t.Skip("3,000 claims")
	}
	ctx := context.Background()
	st := newStore(t)
	minion := newMinion()
	n := 3000
	if raceEnabled {
		n = 300 // the same retries, a tenth of the history: a race-instrumented member compacts 20x slower
	}
	// The keys Create writes (claim, index entry, open entry), 40 claims per transaction: a race-enabled
	// member would take minutes for 3,000 Creates, and the listing is what is tested here.
	for start := 0; start < n; start += 40 {
		var ops []clientv3.Op
		for range min(40, n-start) {
			c := newClaim(minion)
			c.Generation = 1
			data, err := c.MarshalBinary()
			if err != nil {
				t.Fatal(err)
			}
			ops = append(ops, clientv3.OpPut(st.Prefix()+"/claims/"+c.RequestID, string(data)),
				clientv3.OpPut(st.Prefix()+"/clients/"+minion+"/"+c.RequestID, ""),
				clientv3.OpPut(st.Prefix()+"/open/"+minion+"/"+c.RequestID, ""))
		}
		if _, err := st.Client().Txn(ctx).Then(ops...).Commit(); err != nil {
			t.Fatal(err)
		}
	}
	cctx, stop := context.WithCancel(ctx)
	var compactions atomic.Int64
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-cctx.Done():
				return
			case <-tick.C:
			}
			// A write first, so that every compaction removes the revision a listing may have fixed.
			r, err := st.Client().Put(cctx, st.Prefix()+"/churn", time.Now().String())
			if err != nil {
				continue
			}
			if _, err := st.Client().Compact(cctx, r.Header.Revision); err == nil {
				compactions.Add(1)
			}
		}
	}()
	defer func() { stop(); wg.Wait() }()
	for i := range 3 {
		list, err := st.ListByClient(ctx, minion)
		if err != nil || len(list) != n {
			t.Fatalf("listing %d under compaction: %d claims, %v", i, len(list), err)
		}
		open, err := st.ListUnresolved(ctx, minion)
		if err != nil || len(open) != n {
			t.Fatalf("unresolved listing %d under compaction: %d claims, %v", i, len(open), err)
		}
	}
	if compactions.Load() < 3 {
		t.Fatalf("only %d compactions during the listings", compactions.Load())
	}
	t.Logf("%d compactions during 3 listings (and 3 of the unresolved set) of %d claims", compactions.Load(), n)
}

// limited runs functions on at most n goroutines at once and keeps the first error.
type limited struct {
	sem  chan struct{}
	wg   sync.WaitGroup
	once sync.Once
	err  error
}

func newLimited(n int) *limited { return &limited{sem: make(chan struct{}, n)} }

func (l *limited) Go(f func() error) {
	l.sem <- struct{}{}
	l.wg.Add(1)
	go func() {
		defer func() { <-l.sem; l.wg.Done() }()
		if err := f(); err != nil {
			l.once.Do(func() { l.err = err })
		}
	}()
}

func (l *limited) Wait() error { l.wg.Wait(); return l.err }
