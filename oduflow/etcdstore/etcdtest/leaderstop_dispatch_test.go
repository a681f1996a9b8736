package etcdtest

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/oduflow/oduflow-go/oduflow"
	"github.com/oduflow/oduflow-go/oduflow/claims"
	"github.com/oduflow/oduflow-go/oduflow/etcdstore"
	"github.com/oduflow/oduflow-go/receipt"
	"github.com/oduflow/oduflow-go/salt/salttest"
)

// TestLeaderStoppedMidStarts: 3 Dispatchers on 3 etcd clients (each knowing every member of a 3-member
// cluster) take 1,000 concurrent Starts of 200 requests (one per minion, 5 Starts each, spread over the
// dispatchers), and the leader member is stopped once half of them were issued. Once the 2 remaining
// members serve again, for every request: an acknowledged Start has its claim; oduflow_job.run went out
// at most once; and it went out if and only if the claim records the dispatch intent (phase dispatching
// or later, or a final claim with its dispatch time). A Start that returned an error (outcome unknown,
// store unavailable) need not have a claim. The leader dies without handing leadership over, while
// workers are between their client lease and the intent write, so some intent writes lose their
// acknowledgement (ErrOutcomeUnknown) whether or not they committed: their workers settle them by
// re-reading (publishing a committed intent once it is proven theirs, retrying the fenced write of one
// that did not commit), and "iff" holds for them too. The sessions' TTL and the launch grace are long
// enough for the cluster to elect a new leader within the workers' settling window; a worker that still
// could not decide would publish nothing and fail "iff" here.
func TestLeaderStoppedMidStarts(t *testing.T) {
	if testing.Short() {
		t.Skip("a 3-member cluster and 1,000 Starts")
	}
	const requests, perRequest, replicas = 200, 5, 3
	cl := startCluster(t, 3)
	stores := openStores(t, cl.clients, "/ha-"+uuid.NewString()[:8], replicas,
		etcdstore.WithDialTimeout(10*time.Second), etcdstore.WithTTL(leaderStopTTL), windowsOf(leaderStopTimers()))
	sim, minions := startManyMinionMaster(t, requests)
	var leased, recorded atomic.Int32 // workers past their client lease, and with their intent recorded
	step := func(_ context.Context, _ oduflow.RequestRef, s string) {
		switch s {
		case "lease":
			leased.Add(1)
		case "dispatch_recorded":
			recorded.Add(1)
		}
	}
	unknownIntents := &intentWatch{unknown: make(map[string]bool), errs: make(map[string]string)}
	var ds []*oduflow.Dispatcher
	for _, st := range stores {
		d, err := newSaltDispatcher(sim.Addr(), sim.EventsAddr(), sim.KeyFile(), sim.PKIDir(), st,
			oduflow.WithHooks(oduflow.Hooks{Step: step}), oduflow.WithClaimStore(unknownIntents.wrap(st)),
			oduflow.WithTimers(leaderStopTimers()))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = d.Close(closedContext()) })
		ds = append(ds, d)
	}
	reqs := make([]string, requests)
	for i := range reqs {
		reqs[i] = receipt.NewRequestID()
	}

	var (
		mu            sync.Mutex
		acked         = make(map[string]bool)
		issued, done  atomic.Int32
		failed        atomic.Int32
		firstErr      atomic.Value
		half          = make(chan struct{})
		halfOnce      sync.Once
		wg            sync.WaitGroup
		gate          = make(chan struct{})
		total         = requests * perRequest
		spread        = 3 * time.Second
		perStartDelay = spread / time.Duration(total)
	)
	for k := range perRequest {
		for i := range requests {
			slot := i*perRequest + k // a request's 5 Starts race within ~15 ms, on different dispatchers
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-gate
				// Starts spread over a window, so the leader stops in the middle of them
				time.Sleep(time.Duration(slot) * perStartDelay)
				if issued.Add(1) == int32(total/2) {
					halfOnce.Do(func() { close(half) })
				}
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				defer cancel()
				_, err := ds[(i+k)%replicas].Start(ctx, minions[i].id, reqs[i], receipt.ProfileConfigure)
				done.Add(1)
				if err != nil {
					failed.Add(1)
					firstErr.CompareAndSwap(nil, err.Error())
					return
				}
				mu.Lock()
				acked[reqs[i]] = true
				mu.Unlock()
			}()
		}
	}
	lead := cl.leader()
	close(gate)
	<-half
	doneAtStop, leasedAtStop, recordedAtStop := done.Load(), leased.Load(), recorded.Load()
	cl.crash(lead)
	wg.Wait()
	if doneAtStop >= int32(total) {
		t.Fatal("every Start had returned before the leader stopped")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for _, d := range ds {
		if err := d.Wait(ctx); err != nil {
			t.Fatalf("workers still running: %v", err)
		}
	}

	runs := make(map[string]int)
	for _, p := range sim.Publications() {
		if p.Fun == "oduflow_job.run" && len(p.Args) > 0 {
			r, _ := p.Args[0].(string)
			runs[r]++
		}
	}
	reader := stores[(lead+1)%replicas]
	var published, intents, noClaim, lostAcks, settled int
	phases := make(map[claims.Phase]int)
	for i, req := range reqs {
		c, err := getAfterRecovery(ctx, reader, req)
		switch {
		case errors.Is(err, claims.ErrNoClaim):
			noClaim++
			if acked[req] {
				t.Errorf("request %d: its Start was acknowledged but it has no claim", i)
			}
			if runs[req] != 0 {
				t.Errorf("request %d: published %d times without a claim", i, runs[req])
			}
			continue
		case err != nil:
			t.Fatalf("request %d: read after recovery: %v", i, err)
		}
		phases[c.Phase]++
		if runs[req] > 1 {
			t.Errorf("request %d: oduflow_job.run published %d times", i, runs[req])
		}
		if minions[i].runCount() > 1 {
			t.Errorf("request %d: minion executed %d times", i, minions[i].runCount())
		}
		if runs[req] == 1 {
			published++
		}
		if c.WasDispatched() {
			intents++
		}
		if unknownIntents.was(req) {
			lostAcks++
			if runs[req] == 1 {
				settled++
			}
		}
		switch {
		case runs[req] == 1 && !c.WasDispatched():
			t.Errorf("request %d: published without a recorded dispatch intent, claim phase %s", i, c.Phase)
		case runs[req] == 0 && c.WasDispatched():
			t.Errorf("request %d: not published though its claim records the intent (phase %s, code %q); "+
				"intent write error: %q (acknowledgement lost: %v)", i, c.Phase, c.ErrorCode,
				unknownIntents.lastErr(req), unknownIntents.was(req))
		}
	}
	first, _ := firstErr.Load().(string)
	t.Logf("at the stop %d workers were past their lease, %d had recorded the intent; %d requests had an "+
		"intent write whose acknowledgement was lost, %d of them settled by their worker and published once",
		leasedAtStop, recordedAtStop, lostAcks, settled)
	t.Logf("leader m%d stopped after %d Starts issued, %d returned; %d Starts failed (first: %q); "+
		"%d requests acknowledged, %d without claim, %d with the dispatch intent, %d published; phases %v",
		lead, total/2, doneAtStop, failed.Load(), first, len(acked), noClaim, intents, published, phases)
	if len(acked) == 0 || published == 0 {
		t.Fatal("nothing acknowledged or published: the cluster did not recover")
	}
}

// leaderStopTTL and leaderStopTimers: sessions that outlive an election without keepalives (a new leader
// restores every lease's full TTL, but a client whose keepalives fail longer than the TTL gives its
// session up), and a launch grace whose half (the window a worker settles a lost intent
// acknowledgement in) covers the election and the clients' failover.
const leaderStopTTL = 8 * time.Second

func leaderStopTimers() oduflow.Timers {
	t := crashTimers()
	t.LaunchGrace = 16 * time.Second
	return t
}

// intentWatch is the ClaimStore of the dispatchers: each replica's Store, noting the requests whose
// dispatch-intent write (the one CompareAndSwapHeld of a worker) ended with ErrOutcomeUnknown.
type intentWatch struct {
	mu      sync.Mutex
	unknown map[string]bool
	errs    map[string]string // request id -> the last error of its intent write (diagnostics)
}

type watchedStore struct {
	*etcdstore.Store // Create, Get, the leases, ...
	w                *intentWatch
}

func (w *intentWatch) wrap(st *etcdstore.Store) *watchedStore { return &watchedStore{Store: st, w: w} }

func (w *intentWatch) lastErr(req string) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.errs[req]
}

func (w *intentWatch) was(req string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.unknown[req]
}

func (s *watchedStore) CompareAndSwapHeld(ctx context.Context, next *claims.Claim, held ...claims.Lease) (*claims.Claim, error) {
	c, err := s.Store.CompareAndSwapHeld(ctx, next, held...)
	if err != nil && next.Phase == claims.PhaseDispatching {
		s.w.mu.Lock()
		s.w.errs[next.RequestID] = err.Error()
		s.w.mu.Unlock()
	}
	if err != nil && next.Phase == claims.PhaseDispatching && errors.Is(err, etcdstore.ErrOutcomeUnknown) {
		s.w.mu.Lock()
		s.w.unknown[next.RequestID] = true
		s.w.mu.Unlock()
	}
	return c, err
}

// crash stops member i the way a dying process does: raft stops at once, with no leadership transfer
// first (the graceful Close hands leadership over and lets in-flight proposals finish). The member's
// listeners are closed afterwards.
func (c *cluster) crash(i int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.stopped[i] {
		c.stopped[i] = true
		c.members[i].Server.HardStop()
		c.members[i].Close()
	}
}

// getAfterRecovery reads a claim, retrying while the cluster still elects a leader or a client still
// fails over to a live member.
func getAfterRecovery(ctx context.Context, st *etcdstore.Store, req string) (*claims.Claim, error) {
	for {
		c, err := st.Get(ctx, req)
		if err == nil || errors.Is(err, claims.ErrNoClaim) || ctx.Err() != nil {
			return c, err
		}
		// a retry backoff while the cluster elects a leader (what a caller does)
		time.Sleep(100 * time.Millisecond)
	}
}

// startManyMinionMaster starts one salttest master serving n protocol-1 minions; they share one key pair
// (the key is per minion id on the master, so each id's proofs still verify against its accepted key).
func startManyMinionMaster(t *testing.T, n int) (*salttest.Master, []*protoMinion) {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	sim, err := salttest.Start(context.Background(), salttest.WithDir(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sim.Close() })
	ms := make([]*protoMinion, n)
	for i := range ms {
		ms[i] = &protoMinion{id: newMinion(), key: key, receipts: map[string]receipt.Receipt{}}
		sim.AddMinion(ms[i].id, ms[i].handle)
		if err := sim.AcceptMinionKey(ms[i].id, ms[i].publicKeyPEM()); err != nil {
			t.Fatal(err)
		}
	}
	return sim, ms
}
