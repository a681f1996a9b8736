package oduflow

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/oduflow/oduflow-go/oduflow/claims"
	"github.com/oduflow/oduflow-go/oduflow/filestore"
	"github.com/oduflow/oduflow-go/oduflow/oduflowtest/fakeminion"
	"github.com/oduflow/oduflow-go/receipt"
	"github.com/oduflow/oduflow-go/salt"
	"github.com/oduflow/oduflow-go/salt/salttest"
)

// testTimers are short windows so that tests stay fast.
func testTimers() Timers {
	return Timers{ExecutionWait: 8 * time.Second, HardDeadline: 9 * time.Second, StatusExpiry: 10 * time.Second,
		LaunchGrace: defaultLaunchGrace, LeaseWait: 2 * time.Second, PollBudget: 16, CallTimeout: 2 * time.Second}
}

type simEnv struct {
	t       testing.TB
	sim     *salttest.Master
	keyFile string // a private copy of the root key the client reads per request
	client  *salt.Client
	dir     string

	mu          sync.Mutex
	dispatchers []*Dispatcher // every Dispatcher the env made, for quiesce
}

func quietLogger() *slog.Logger {
	if os.Getenv("ODUFLOW_TEST_VERBOSE") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

func startSim(t testing.TB, opts ...salttest.Option) *simEnv {
	t.Helper()
	ctx := context.Background()
	opts = append([]salttest.Option{salttest.WithDir(t.TempDir())}, opts...)
	sim, err := salttest.Start(ctx, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sim.Close() })
	e := &simEnv{t: t, sim: sim, dir: claimDir(t)}
	e.keyFile = filepath.Join(t.TempDir(), ".root_key")
	e.syncKey()
	e.client = e.newClient()
	return e
}

// syncKey copies the simulator's current root key to the client's key file.
func (e *simEnv) syncKey() {
	data, err := os.ReadFile(e.sim.KeyFile())
	if err != nil {
		e.t.Fatal(err)
	}
	if err := os.WriteFile(e.keyFile, data, 0o600); err != nil {
		e.t.Fatal(err)
	}
}

func (e *simEnv) newClient(opts ...salt.ClientOption) *salt.Client {
	e.t.Helper()
	opts = append([]salt.ClientOption{salt.WithAuth(salt.UserKey("root", e.keyFile)),
		salt.WithRequestTimeout(2 * time.Second), salt.WithLogger(quietLogger())}, opts...)
	c, err := salt.NewClient(e.sim.Addr(), opts...)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { _ = c.Close() })
	return c
}

func (e *simEnv) events() EventSource {
	return SaltEvents(e.sim.EventsAddr(), salt.WithReconnectBackoff(20*time.Millisecond, 200*time.Millisecond),
		salt.WithLogger(quietLogger()))
}

func newSimMinion(id string, opts ...fakeminion.ModelOption) *fakeminion.Model {
	return fakeminion.NewModel(id, opts...)
}

func (e *simEnv) addMinion(opts ...fakeminion.ModelOption) *fakeminion.Model {
	m := fakeminion.NewModel(newMinionID(), opts...)
	e.accept(m)
	e.sim.AddMinion(m.ID(), m.Handle)
	return m
}

// addMinions adds n minions with the same options. Their RSA keys (what takes the time, much more under
// the race detector) are made concurrently; the master learns them in order.
func (e *simEnv) addMinions(n int, opts ...fakeminion.ModelOption) []*fakeminion.Model {
	ms := make([]*fakeminion.Model, n)
	var wg sync.WaitGroup
	for i := range ms {
		wg.Go(func() { ms[i] = fakeminion.NewModel(newMinionID(), opts...) })
	}
	wg.Wait()
	for _, m := range ms {
		e.accept(m)
		e.sim.AddMinion(m.ID(), m.Handle)
	}
	return ms
}

// accept stores m's public key as the master's accepted key for its id (what proofs verify against).
func (e *simEnv) accept(m *fakeminion.Model) {
	e.t.Helper()
	if err := e.sim.AcceptMinionKey(m.ID(), m.PublicKeyPEM()); err != nil {
		e.t.Fatal(err)
	}
}

// testWindows builds a file store with the status windows of testTimers (New refuses a store whose
// windows are not its Timers').
func testWindows() filestore.Option {
	return filestore.WithStatusWindows(testTimers().LaunchGrace, testTimers().StatusExpiry)
}

func (e *simEnv) dispatcher(opts ...Option) *Dispatcher {
	e.t.Helper()
	return e.dispatcherWith(e.client, opts...)
}

func (e *simEnv) dispatcherWith(p Publisher, opts ...Option) *Dispatcher {
	e.t.Helper()
	opts = append([]Option{WithClaimDir(e.dir), WithTimers(testTimers()), WithLogger(quietLogger()),
		WithPKIDir(e.sim.PKIDir())}, opts...)
	d, err := New(p, e.events(), opts...)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { _ = d.Close(closedContext()) })
	e.mu.Lock()
	e.dispatchers = append(e.dispatchers, d)
	e.mu.Unlock()
	return d
}

// quiesce closes every Dispatcher of the env, waiting for their workers to end (Close drains): after it,
// none of them publishes anything more, so a count of publications is final. It is how a test checks that
// nothing was published late, without sleeping for a guess of how late that could be. (Status, Lookup and
// Quarantine still answer after Close.)
func (e *simEnv) quiesce() {
	e.t.Helper()
	e.mu.Lock()
	ds := append([]*Dispatcher(nil), e.dispatchers...)
	e.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, d := range ds {
		if err := d.Close(ctx); err != nil {
			e.t.Fatalf("a worker still ran at quiesce: %v", err)
		}
	}
}

func (e *simEnv) runs() int { return e.sim.PublicationCount(funRun, "") }

// waitFinal polls Status until it is neither running nor (optionally) unknown-while-launching.
func waitFinal(t testing.TB, d *Dispatcher, p receipt.Profile, minion, request string) Response {
	t.Helper()
	if !waitUntil(30*time.Second, func() bool {
		c, err := d.store.Get(context.Background(), request)
		return err == nil && c.Phase.Final()
	}) {
		t.Fatalf("request %s not final", request)
	}
	r, err := d.Status(context.Background(), minion, request, p)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func mustStart(t testing.TB, d *Dispatcher, p receipt.Profile, minion, request string) Response {
	t.Helper()
	r, err := d.Start(context.Background(), minion, request, p)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func mustClaim(t testing.TB, d *Dispatcher, request string) *claims.Claim {
	t.Helper()
	c, err := d.store.Get(context.Background(), request)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
