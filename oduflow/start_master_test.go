package oduflow

import (
	"context"
	"errors" // the standard library's: the readiness sentinels must be visible to it
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/oduflow/oduflow-go/receipt"
	"github.com/oduflow/oduflow-go/salt"
	"github.com/oduflow/oduflow-go/salt/salttest"
)

// closedPort returns a TCP address on loopback nothing listens on (a port bound, then released).
func closedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	return "tcp://" + addr
}

// pingCountingClient counts the readiness pings a *salt.Client answers for the dispatcher.
type pingCountingClient struct {
	*salt.Client
	pings atomic.Int64
}

func (p *pingCountingClient) Ping(ctx context.Context) error {
	p.pings.Add(1)
	return p.Client.Ping(ctx)
}

// A user key that loads and a live event bus, but the master's request port closed: Start returns
// ErrNotReady (the master unreachable) and writes nothing. The old check read only the key file and the
// subscription, so it wrote a claim that ended failed 0/1.
func TestStartNotReadyMasterPortClosed(t *testing.T) {
	e := startSim(t)
	m := e.addMinion()
	dead, err := salt.NewClient(closedPort(t), salt.WithAuth(salt.UserKey("root", e.keyFile)),
		salt.WithRequestTimeout(2*time.Second), salt.WithLogger(quietLogger()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = dead.Close() })
	d := e.dispatcherWith(dead)
	req := uuid.NewString()
	_, err = d.Start(context.Background(), m.ID(), req, receipt.ProfileConfigure)
	if !errors.Is(err, ErrNotReady) || !errors.Is(err, errMasterUnreachable) || !errors.Is(err, salt.ErrNotSent) {
		t.Fatalf("closed request port: %v", err)
	}
	wantOneLine(t, "ErrNotReady", err)
	noClaim(t, d, req)
	if n := len(e.sim.Publications()); n != 0 {
		t.Fatalf("published %d", n)
	}
}

// The master stopped after a first request: a new request is refused with nothing written (once the
// ping's proof is older than masterProofTTL: the test backdates it), while the first request's repeated
// Start still answers from its claim.
func TestStartNotReadyMasterStoppedRepeatAnswers(t *testing.T) {
	e := startSim(t)
	m := e.addMinion()
	d := e.dispatcher()
	first := uuid.NewString()
	mustStart(t, d, receipt.ProfileConfigure, m.ID(), first)
	if got := waitFinal(t, d, receipt.ProfileConfigure, m.ID(), first); got.Status != receipt.StatusSucceeded {
		t.Fatalf("%+v", got)
	}
	if err := e.sim.Close(); err != nil {
		t.Fatal(err)
	}
	// The master's last proof is older than masterProofTTL: backdated, rather than waited out.
	d.masterProvedAt.Store(time.Now().Add(-masterProofTTL - time.Millisecond).UnixNano())
	req := uuid.NewString()
	_, err := d.Start(context.Background(), m.ID(), req, receipt.ProfileConfigure)
	if !errors.Is(err, ErrNotReady) || !errors.Is(err, errMasterUnreachable) {
		t.Fatalf("stopped master: %v, want ErrNotReady naming the master (its proof is stale)", err)
	}
	noClaim(t, d, req)
	r, err := d.Start(context.Background(), m.ID(), first, receipt.ProfileConfigure)
	if err != nil || r.Status != receipt.StatusSucceeded {
		t.Fatalf("repeat: %+v %v", r, err)
	}
}

// The request channel answers but the event bus is gone (its master stopped; the stream is
// reconnecting): Start returns ErrNotReady (the event bus) and writes nothing. The old check took the
// reconnecting stream for a live subscription.
func TestStartNotReadyBusReconnectingWritesNothing(t *testing.T) {
	e := startSim(t)
	m := e.addMinion()
	bus, err := salttest.Start(context.Background(), salttest.WithDir(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = bus.Close() })
	d, err := New(e.client, SaltEvents(bus.EventsAddr(), salt.WithReconnectBackoff(time.Second, 2*time.Second),
		salt.WithLogger(quietLogger())), WithClaimDir(e.dir), WithTimers(testTimers()), WithLogger(quietLogger()),
		WithPKIDir(e.sim.PKIDir()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close(context.Background()) })
	if err := d.hub.live(context.Background()); err != nil {
		t.Fatal(err)
	}
	_ = bus.Close()
	if !waitUntil(5*time.Second, func() bool { return d.hub.live(context.Background()) != nil }) {
		t.Fatal("the subscription still reads as live 5 s after its master stopped")
	}
	req := uuid.NewString()
	_, err = d.Start(context.Background(), m.ID(), req, receipt.ProfileConfigure)
	if !errors.Is(err, ErrNotReady) || !errors.Is(err, errEventBus) {
		t.Fatalf("reconnecting bus: %v", err)
	}
	noClaim(t, d, req)
	if n := len(e.sim.Publications()); n != 0 {
		t.Fatalf("published %d", n)
	}
}

// The readiness ping is shared: a burst of Starts within masterProofTTL costs one ping in all.
func TestStartReadinessPingCached(t *testing.T) {
	t.Parallel()
	e := startSim(t)
	m := e.addMinion()
	p := &pingCountingClient{Client: e.client}
	d := e.dispatcherWith(p)
	t0 := time.Now()
	for i := 0; i < 10; i++ {
		req := uuid.NewString()
		mustStart(t, d, receipt.ProfileConfigure, m.ID(), req)
		waitFinal(t, d, receipt.ProfileConfigure, m.ID(), req)
	}
	// A proof is renewed once it is masterProofRefresh old (in the background, while it still stands).
	if n, want := p.pings.Load(), int64(time.Since(t0)/d.masterProofRefresh())+1; n > want || n < 1 {
		t.Fatalf("%d readiness pings for 10 Starts in %s, want 1..%d", n, time.Since(t0), want)
	}
}

// blockingPingClient's pings wait until release is closed (once block is set) and are counted.
type blockingPingClient struct {
	*salt.Client
	pings   atomic.Int64
	block   atomic.Bool
	release chan struct{}
}

func (p *blockingPingClient) Ping(ctx context.Context) error {
	p.pings.Add(1)
	if p.block.Load() {
		select {
		case <-p.release:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return p.Client.Ping(ctx)
}

// A proof past masterProofRefresh but still fresh is renewed by a ping in the background: the Start that
// notices goes on at once, however long the master takes to answer the ping (a master busy with a
// burst's publications), and the renewed proof spares the Starts after it the wait when the old one
// would have expired. Before, every masterProofTTL one Start pinged and every concurrent Start waited
// for it.
func TestStartReadinessProofRenewedAhead(t *testing.T) {
	t.Parallel()
	e := startSim(t)
	m := e.addMinion()
	p := &blockingPingClient{Client: e.client, release: make(chan struct{})}
	d := e.dispatcherWith(p)
	mustStart(t, d, receipt.ProfileConfigure, m.ID(), uuid.NewString()) // the first proof, waited for
	if n := p.pings.Load(); n != 1 {
		t.Fatalf("%d pings for the first Start, want 1", n)
	}
	old := time.Now().Add(-d.masterProofRefresh() - 100*time.Millisecond).UnixNano()
	d.masterProvedAt.Store(old)
	p.block.Store(true)
	started := make(chan error, 1)
	go func() {
		_, err := d.Start(context.Background(), m.ID(), uuid.NewString(), receipt.ProfileConfigure)
		started <- err
	}()
	select {
	case err := <-started:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		close(p.release)
		t.Fatal("a Start with a fresh proof waited for the renewing ping")
	}
	if !waitUntil(5*time.Second, func() bool { return p.pings.Load() == 2 }) {
		t.Fatalf("%d pings: the aging proof was not renewed", p.pings.Load())
	}
	if at := d.masterProvedAt.Load(); at != old {
		t.Fatal("the proof was renewed before the master answered")
	}
	close(p.release)
	if !waitUntil(5*time.Second, func() bool { return d.masterProvedAt.Load() > old }) {
		t.Fatal("the answered ping did not renew the proof")
	}
	if n := p.pings.Load(); n != 2 {
		t.Fatalf("%d pings, want 2: one renewal at a time", n)
	}
}

// BenchmarkReadinessPing measures the readiness check's round trip against the simulated master (paid
// once per masterProofTTL) and the cached path every other Start pays.
func BenchmarkReadinessPing(b *testing.B) {
	e := startSim(b)
	d := e.dispatcher()
	ctx := context.Background()
	b.Run("round_trip", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			d.masterProvedAt.Store(0)
			if err := d.masterAnswers(ctx); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("cached", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if err := d.masterAnswers(ctx); err != nil {
				b.Fatal(err)
			}
		}
	})
}
