package etcdtest

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/oduflow/oduflow-go/internal/testwait"
	"github.com/oduflow/oduflow-go/oduflow"
	"github.com/oduflow/oduflow-go/receipt"
	receiptproof "github.com/oduflow/oduflow-go/receipt/proof"
	"github.com/oduflow/oduflow-go/salt"
)

// fakeMaster stands in for the Salt master of several dispatchers: it answers oduflow_job.capabilities
// on its event bus, counts every oduflow_job.run publication and never returns one (so a dispatched
// request stays unresolved: unknown, quarantining its client).
type fakeMaster struct {
	mu      sync.Mutex
	subs    []*fakeSub
	runs    map[string]int // request id -> publications of oduflow_job.run
	noProof bool           // capabilities advertise no receipt proofs: every preflight fails after its quarantine check
}

type fakeSub struct {
	ch   chan salt.Event
	once sync.Once
}

func (s *fakeSub) Events() <-chan salt.Event { return s.ch }
func (s *fakeSub) Close() error              { s.once.Do(func() { close(s.ch) }); return nil }

func (m *fakeMaster) Subscribe(context.Context) (oduflow.Subscription, error) {
	s := &fakeSub{ch: make(chan salt.Event, 1024)}
	m.mu.Lock()
	m.subs = append(m.subs, s)
	m.mu.Unlock()
	return s, nil
}

func (m *fakeMaster) Publish(_ context.Context, req salt.PublishRequest) (*salt.PublishResult, error) {
	minion := req.Target.List[0]
	m.mu.Lock()
	defer m.mu.Unlock()
	switch req.Fun {
	case "oduflow_job.run":
		m.runs[req.Args[0].(string)]++
	case "oduflow_job.capabilities":
		jr := &salt.JobReturn{JID: req.JID, MinionID: minion, ID: minion, Fun: req.Fun, Success: true,
			Return: map[string]any{"protocol": int64(1), "pillar_ready": true, "runtime_guard": true,
				"proof":   map[string]any{"alg": receiptproof.Alg, "ready": !m.noProof},
				"fencing": map[string]any{"version": int64(1), "ready": true}}}
		for _, s := range m.subs {
			func() {
				defer func() { _ = recover() }() // a closed subscription
				s.ch <- salt.Event{Tag: "salt/job/" + string(req.JID) + "/ret/" + minion, JobReturn: jr}
			}()
		}
	}
	return &salt.PublishResult{JID: req.JID, Minions: []string{minion}}, nil
}

// TestDispatchersShareOneClient: three Dispatchers (replicas) on three Stores start 30 different
// requests for one client at once. The client lease and the quarantine across replicas let exactly one be
// published; every other ends failed before publishing (quarantined or lease busy).
func TestDispatchersShareOneClient(t *testing.T) {
	master := &fakeMaster{runs: make(map[string]int)}
	timers := oduflow.Timers{ExecutionWait: 2 * time.Second, HardDeadline: 3 * time.Second,
		StatusExpiry: 4 * time.Second, LaunchGrace: 20 * time.Second, LeaseWait: 5 * time.Second, PollBudget: 1,
		CallTimeout: 2 * time.Second}
	stores := newStores(t, 3, windowsOf(timers))
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	minion := newMinion()
	// The preflight reads the minion's accepted key from the master's pki_dir (receipt proofs).
	pki := t.TempDir()
	if err := os.MkdirAll(filepath.Join(pki, "minions"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(pki, "minions", minion), newProtoMinion(minion).publicKeyPEM(), 0o644); err != nil {
		t.Fatal(err)
	}
	var ds []*oduflow.Dispatcher
	for _, s := range stores {
		d, err := oduflow.New(master, master, oduflow.WithClaimStore(s), oduflow.WithTimers(timers),
			oduflow.WithLogger(quiet), oduflow.WithPKIDir(pki))
		if err != nil {
			t.Fatal(err)
		}
		ds = append(ds, d)
	}
	reqs := make([]string, 30)
	var wg sync.WaitGroup
	for i := range reqs {
		reqs[i] = receipt.NewRequestID()
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := ds[i%3].Start(context.Background(), minion, reqs[i], receipt.ProfileConfigure); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	ctx := context.Background()
	testwait.Until(t, "not every claim final", 60*time.Second, func() bool {
		final := 0
		list, err := stores[0].ListByClient(ctx, minion)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range list {
			if c.Phase.Final() {
				final++
			}
		}
		return final == len(reqs)
	})
	for _, d := range ds {
		_ = d.Close(closedContext())
	}
	list, _ := stores[1].ListByClient(ctx, minion)
	dispatched, codes := 0, map[string]int{}
	for _, c := range list {
		if c.WasDispatched() {
			dispatched++
		}
		codes[string(c.ErrorCode)]++
	}
	master.mu.Lock()
	total := 0
	for _, n := range master.runs {
		total += n
	}
	master.mu.Unlock()
	t.Logf("publications %d, dispatched claims %d, codes %v", total, dispatched, codes)
	if total != 1 || dispatched != 1 {
		t.Fatalf("%d publications, %d dispatched claims for one client", total, dispatched)
	}
}
