package salt_test

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/oduflow/oduflow-go/salt"
)

// tcpProxy forwards connections to the simulator's request port, counts them, and can kill or
// freeze the ones it holds: a real socket between client and master whose failures the test
// chooses.
type tcpProxy struct {
	ln       net.Listener
	target   string
	accepted atomic.Int32
	mu       sync.Mutex
	pairs    []*proxyPair
}

type proxyPair struct {
	client, server net.Conn
	frozen         atomic.Bool
}

func startProxy(t *testing.T, target string) *tcpProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &tcpProxy{ln: ln, target: strings.TrimPrefix(target, "tcp://")}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			p.accepted.Add(1)
			s, err := net.Dial("tcp", p.target)
			if err != nil {
				_ = c.Close()
				continue
			}
			pair := &proxyPair{client: c, server: s}
			p.mu.Lock()
			p.pairs = append(p.pairs, pair)
			p.mu.Unlock()
			go pair.pipe(c, s)
			go pair.pipe(s, c)
		}
	}()
	t.Cleanup(func() { _ = ln.Close(); p.kill() })
	return p
}

// pipe copies until an error; a frozen pair stops forwarding but keeps both sockets open.
func (pp *proxyPair) pipe(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 && !pp.frozen.Load() {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			if err != io.EOF || !pp.frozen.Load() {
				_ = dst.Close()
			}
			return
		}
	}
}

func (p *tcpProxy) addr() string { return "tcp://" + p.ln.Addr().String() }

// kill closes every connection it holds, both sides.
func (p *tcpProxy) kill() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, pp := range p.pairs {
		_ = pp.client.Close()
		_ = pp.server.Close()
	}
	p.pairs = nil
}

// freeze makes the connections it holds silent black holes (open, forwarding nothing).
func (p *tcpProxy) freeze() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, pp := range p.pairs {
		pp.frozen.Store(true)
	}
}

func TestConnectionReuse(t *testing.T) {
	t.Parallel()
	e := startSim(t)
	newClient := func(p *tcpProxy, opts ...salt.ClientOption) *salt.Client {
		c, err := salt.NewClient(p.addr(), append([]salt.ClientOption{salt.WithAuth(salt.UserKey("root", e.sim.KeyFile())),
			salt.WithRequestTimeout(3 * time.Second)}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	published := func() int { return e.sim.PublicationCount("test.ping", "") }

	t.Run("one connection for many requests, only when asked", func(t *testing.T) {
		for _, reuse := range []bool{false, true} {
			p := startProxy(t, e.sim.Addr())
			var opts []salt.ClientOption
			if reuse {
				opts = append(opts, salt.WithConnectionReuse())
			}
			c := newClient(p, opts...)
			for i := 0; i < 5; i++ {
				if _, err := stdPing(e, c); err != nil {
					t.Fatal(err)
				}
			}
			want := map[bool]int32{false: 5, true: 1}[reuse]
			if got := p.accepted.Load(); got != want {
				t.Fatalf("reuse=%v: %d connections, want %d", reuse, got, want)
			}
		}
	})
	t.Run("dead idle connection: fresh one, published once", func(t *testing.T) {
		p := startProxy(t, e.sim.Addr())
		c := newClient(p, salt.WithConnectionReuse())
		if _, err := stdPing(e, c); err != nil {
			t.Fatal(err)
		}
		p.kill()
		before := published()
		if _, err := stdPing(e, c); err != nil {
			t.Fatalf("after the idle connection died: %v", err)
		}
		if published()-before != 1 || p.accepted.Load() != 2 {
			t.Fatalf("published %d, connections %d", published()-before, p.accepted.Load())
		}
	})
	t.Run("silent idle connection: discarded after the PING, fresh one", func(t *testing.T) {
		p := startProxy(t, e.sim.Addr())
		c := newClient(p, salt.WithConnectionReuse())
		if _, err := stdPing(e, c); err != nil {
			t.Fatal(err)
		}
		p.freeze()
		before := published()
		start := time.Now()
		if _, err := stdPing(e, c); err != nil {
			t.Fatalf("after the idle connection went silent: %v", err)
		}
		if published()-before != 1 || p.accepted.Load() != 2 {
			t.Fatalf("published %d, connections %d", published()-before, p.accepted.Load())
		}
		t.Logf("PING gave up after %s", time.Since(start))
	})
	t.Run("dead idle connection and master gone: not sent", func(t *testing.T) {
		p := startProxy(t, e.sim.Addr())
		c := newClient(p, salt.WithConnectionReuse())
		if _, err := stdPing(e, c); err != nil {
			t.Fatal(err)
		}
		_ = p.ln.Close()
		p.kill()
		before := published()
		_, err := stdPing(e, c)
		if !errors.Is(err, salt.ErrNotSent) || errors.Is(err, salt.ErrOutcomeUnknown) {
			t.Fatalf("want ErrNotSent, got %v", err)
		}
		if published() != before {
			t.Fatal("published")
		}
	})
	t.Run("reply lost on a reused connection: outcome unknown, connection discarded", func(t *testing.T) {
		p := startProxy(t, e.sim.Addr())
		c := newClient(p, salt.WithConnectionReuse(), salt.WithRequestTimeout(500*time.Millisecond))
		if _, err := stdPing(e, c); err != nil {
			t.Fatal(err)
		}
		e.sim.DropNextReply("publish")
		before := published()
		_, err := stdPing(e, c)
		if !errors.Is(err, salt.ErrOutcomeUnknown) || errors.Is(err, salt.ErrNotSent) {
			t.Fatalf("want ErrOutcomeUnknown, got %v", err)
		}
		if published()-before != 1 {
			t.Fatalf("published %d times, want exactly once (never resent)", published()-before)
		}
		if _, err := stdPing(e, c); err != nil {
			t.Fatal(err)
		}
		if got := p.accepted.Load(); got != 2 {
			t.Fatalf("%d connections: the one without a reply was reused", got)
		}
	})
	t.Run("connection killed after the request: outcome unknown", func(t *testing.T) {
		p := startProxy(t, e.sim.Addr())
		c := newClient(p, salt.WithConnectionReuse())
		if _, err := stdPing(e, c); err != nil {
			t.Fatal(err)
		}
		e.sim.DelayNextReply("publish", time.Second)
		before := published()
		go func() {
			// wait until the publish is in, then cut the connection before the reply
			_ = e.sim.WaitUntil(t.Context(), func() bool { return published() != before })
			p.kill()
		}()
		_, err := stdPing(e, c)
		if !errors.Is(err, salt.ErrOutcomeUnknown) || errors.Is(err, salt.ErrNotSent) {
			t.Fatalf("want ErrOutcomeUnknown, got %v", err)
		}
		if published()-before != 1 {
			t.Fatalf("published %d times", published()-before)
		}
	})
	t.Run("close releases idle connections", func(t *testing.T) {
		p := startProxy(t, e.sim.Addr())
		c := newClient(p, salt.WithConnectionReuse())
		if _, err := stdPing(e, c); err != nil {
			t.Fatal(err)
		}
		_ = c.Close()
		p.mu.Lock()
		pp := p.pairs[0]
		p.mu.Unlock()
		_ = pp.client.SetReadDeadline(time.Now().Add(2 * time.Second))
		if _, err := pp.client.Read(make([]byte, 1)); err == nil || errors.Is(err, context.DeadlineExceeded) || isTimeout(err) {
			t.Fatalf("idle connection still open after Close: %v", err)
		}
		if _, err := stdPing(e, c); !errors.Is(err, salt.ErrClosed) {
			t.Fatalf("after Close: %v", err)
		}
	})
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
