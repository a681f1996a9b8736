package etcdtest

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"go.etcd.io/etcd/server/v3/embed"

	"github.com/oduflow/oduflow-go/internal/testwait"
	"github.com/oduflow/oduflow-go/oduflow/claims"
	"github.com/oduflow/oduflow-go/oduflow/etcdstore"
	"github.com/oduflow/oduflow-go/receipt"
)

// cluster is a set of embedded etcd members on loopback ports chosen at run time.
type cluster struct {
	t       testing.TB
	members []*embed.Etcd
	clients []string // client URL of each member
	stopped []bool
	errs    chan error
	mu      sync.Mutex
}

func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func mustURL(t testing.TB, s string) url.URL {
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return *u
}

// startCluster starts n members (1 or 3) with data directories in t.TempDir() and stops them at cleanup.
// fsync is off: these tests stop members gracefully, they never cut power.
//
// A port freePort found free can be taken by another process (or another test binary's outgoing
// connection) before etcd binds it; such a start is retried on fresh ports, a few times, instead of
// failing the test on a race that is not the code under test (CI saw "bind: address already in use").
func startCluster(t testing.TB, n int) *cluster {
	t.Helper()
	const attempts = 5
	for attempt := 1; ; attempt++ {
		c, err := tryStartCluster(t, n)
		if err == nil {
			t.Cleanup(c.stopAll)
			c.awaitReady()
			return c
		}
		if attempt == attempts || !strings.Contains(err.Error(), "address already in use") {
			t.Fatal(err)
		}
		t.Logf("attempt %d: %v; retrying on fresh ports", attempt, err)
	}
}

func tryStartCluster(t testing.TB, n int) (*cluster, error) {
	c := &cluster{t: t, stopped: make([]bool, n), errs: make(chan error, n)}
	peers := make([]string, n)
	var initial []string
	for i := range n {
		peers[i] = fmt.Sprintf("http://127.0.0.1:%d", freePort(t))
		c.clients = append(c.clients, fmt.Sprintf("http://127.0.0.1:%d", freePort(t)))
		initial = append(initial, fmt.Sprintf("m%d=%s", i, peers[i]))
	}
	token := "oduflow-test-" + uuid.NewString()[:8]
	for i := range n {
		cfg := embed.NewConfig()
		cfg.Name = fmt.Sprintf("m%d", i)
		cfg.Dir = t.TempDir()
		cfg.ListenPeerUrls = []url.URL{mustURL(t, peers[i])}
		cfg.AdvertisePeerUrls = cfg.ListenPeerUrls
		cfg.ListenClientUrls = []url.URL{mustURL(t, c.clients[i])}
		cfg.AdvertiseClientUrls = cfg.ListenClientUrls
		cfg.InitialCluster = strings.Join(initial, ",")
		cfg.InitialClusterToken = token
		cfg.ClusterState = embed.ClusterStateFlagNew
		cfg.LogLevel = "error"
		cfg.UnsafeNoFsync = true
		cfg.MaxRequestBytes = 3 << 20 // the conformance suite stores a 2 MiB hostile record
		e, err := embed.StartEtcd(cfg)
		if err != nil {
			c.stopAll()
			return nil, fmt.Errorf("start member %d: %w", i, err)
		}
		c.members = append(c.members, e)
		go func() {
			if err, ok := <-e.Err(); ok && err != nil {
				c.errs <- err
			}
		}()
	}
	return c, nil
}

func (c *cluster) awaitReady() {
	c.t.Helper()
	for i, e := range c.members {
		select {
		case <-e.Server.ReadyNotify():
		case err := <-c.errs:
			c.t.Fatalf("member failed: %v", err)
		case <-time.After(60 * time.Second):
			c.t.Fatalf("member %d not ready", i)
		}
	}
}

func (c *cluster) stop(i int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.stopped[i] {
		c.stopped[i] = true
		c.members[i].Close()
	}
}

func (c *cluster) stopAll() {
	for i := range c.members {
		c.stop(i)
	}
}

// leader is the index of the member that currently leads.
func (c *cluster) leader() int {
	c.t.Helper()
	lead := -1
	testwait.Until(c.t, "no leader", 20*time.Second, func() bool {
		for i, e := range c.members {
			if !c.stopped[i] && e.Server.Leader() == e.Server.MemberID() {
				lead = i
				return true
			}
		}
		return false
	})
	return lead
}

// sharedSingle is one single-member cluster per test binary: tests isolate themselves by prefix.
var sharedSingle struct {
	once sync.Once
	c    *cluster
	stop func()
}

// newStore opens a Store on the shared single-member cluster under a fresh prefix; it is closed at the
// end of the test. It has the shape a conformance-suite factory needs (func(t) store).
func newStore(t testing.TB, opts ...etcdstore.Option) *etcdstore.Store {
	t.Helper()
	return newStores(t, 1, opts...)[0]
}

// newStores opens n Stores (n clients: n controller replicas) sharing one fresh prefix.
func newStores(t testing.TB, n int, opts ...etcdstore.Option) []*etcdstore.Store {
	t.Helper()
	sharedSingle.once.Do(func() {
		lt := &leakyT{TB: t}
		sharedSingle.c = startCluster(lt, 1)
		sharedSingle.stop = lt.runCleanups
	})
	return openStores(t, sharedSingle.c.clients, "/test-"+uuid.NewString()[:8], n, opts...)
}

func openStores(t testing.TB, endpoints []string, prefix string, n int, opts ...etcdstore.Option) []*etcdstore.Store {
	t.Helper()
	var out []*etcdstore.Store
	for range n {
		all := append([]etcdstore.Option{etcdstore.WithEndpoints(endpoints...), etcdstore.WithPrefix(prefix)}, opts...)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		s, err := etcdstore.Open(ctx, all...)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		out = append(out, s)
	}
	return out
}

// leakyT keeps the shared cluster's cleanups for TestMain instead of the first test that started it.
type leakyT struct {
	testing.TB
	mu       sync.Mutex
	cleanups []func()
}

func (l *leakyT) Cleanup(f func()) { l.mu.Lock(); l.cleanups = append(l.cleanups, f); l.mu.Unlock() }
func (l *leakyT) TempDir() string  { return tempDir() }
func (l *leakyT) runCleanups() {
	for i := len(l.cleanups) - 1; i >= 0; i-- {
		l.cleanups[i]()
	}
}

func newClaim(minion string) *claims.Claim {
	return &claims.Claim{Protocol: 1, MinionID: minion, RequestID: receipt.NewRequestID(),
		Profile: receipt.ProfileConfigure, Role: "configure", JID: newJID(), Phase: claims.PhaseClaimed,
		CreatedAt: time.Now().UTC().Truncate(time.Microsecond)}
}

func newMinion() string { return "client-" + uuid.NewString() }

var jidMu sync.Mutex
var jidLast int64

// newJID returns distinct 20-digit JIDs.
func newJID() string {
	jidMu.Lock()
	defer jidMu.Unlock()
	n := time.Now().UnixMicro()
	if n <= jidLast {
		n = jidLast + 1
	}
	jidLast = n
	return fmt.Sprintf("%020d", n)
}

// proxy is a TCP forwarder whose connections can be cut, to partition one client from the cluster.
type proxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	conns  []net.Conn
	cut    bool
}

func newProxy(t testing.TB, target string) *proxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{ln: ln, target: strings.TrimPrefix(target, "http://")}
	t.Cleanup(func() { _ = ln.Close(); p.setCut(true) })
	go p.serve()
	return p
}

func (p *proxy) addr() string { return "http://" + p.ln.Addr().String() }

func (p *proxy) serve() {
	for {
		in, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		if p.cut {
			p.mu.Unlock()
			_ = in.Close()
			continue
		}
		out, err := net.Dial("tcp", p.target)
		if err != nil {
			p.mu.Unlock()
			_ = in.Close()
			continue
		}
		p.conns = append(p.conns, in, out)
		p.mu.Unlock()
		go func() { _, _ = io.Copy(out, in); _ = out.Close() }()
		go func() { _, _ = io.Copy(in, out); _ = in.Close() }()
	}
}

// setCut closes every forwarded connection and refuses new ones (true), or accepts them again (false).
func (p *proxy) setCut(cut bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = cut
	if cut {
		for _, c := range p.conns {
			_ = c.Close()
		}
		p.conns = nil
	}
}
