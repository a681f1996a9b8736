package salt

import (
	"context"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/cockroachdb/errors"

	"github.com/oduflow/oduflow-go/internal/salttrace"
)

// The request transport: one request body out, one reply body back, over ZMTP
// (zmtp.go). By default every request dials its own connection and closes it
// (roundTrip); with WithConnectionReuse a proven idle connection may carry it
// (pooledRoundTrip). Either way the error says whether nothing left this
// process (ErrNotSent) or the request was sent (ErrOutcomeUnknown), and
// nothing is ever resent.

// reqEndpoint is a parsed "tcp://host:port" or "ipc:///path" address.
type reqEndpoint struct {
	network, address string
}

func parseEndpoint(addr string) (reqEndpoint, error) {
	switch {
	case strings.HasPrefix(addr, "tcp://"):
		hp := strings.TrimPrefix(addr, "tcp://")
		if _, _, err := net.SplitHostPort(hp); err != nil {
			return reqEndpoint{}, errors.Wrapf(ErrInvalidRequest, "bad tcp address %q", addr)
		}
		return reqEndpoint{"tcp", hp}, nil
	case strings.HasPrefix(addr, "ipc://"):
		p := strings.TrimPrefix(addr, "ipc://")
		if p == "" {
			return reqEndpoint{}, errors.Wrapf(ErrInvalidRequest, "bad ipc address %q", addr)
		}
		return reqEndpoint{"unix", p}, nil
	}
	return reqEndpoint{}, errors.Wrapf(ErrInvalidRequest, "unsupported address %q (want tcp:// or ipc://)", addr)
}

// roundTrip performs one request on a fresh connection: dial, handshake,
// send [delimiter, body], read one reply. The connection is closed on return
// (Salt's 3006.0 client does the same), so a lost reply or a timeout never
// poisons a later request. ctx cancellation closes the connection.
//
// The error wraps ErrNotSent when no byte of the request left this process,
// ErrOutcomeUnknown otherwise.
func roundTrip(ctx context.Context, ep reqEndpoint, body []byte, maxReply int64, tr *salttrace.Trace) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, notSent(err, "context done before dialing")
	}
	var d net.Dialer
	nc, err := d.DialContext(ctx, ep.network, ep.address)
	if err != nil {
		return nil, notSent(err, "dial")
	}
	tr.Mark(salttrace.Connected)
	defer nc.Close()
	stop := context.AfterFunc(ctx, func() { _ = nc.Close() })
	defer stop()
	if dl, ok := ctx.Deadline(); ok {
		_ = nc.SetDeadline(dl)
	}
	zc, err := zmtpHandshake(nc)
	if err != nil {
		err = withCtxCause(ctx, err)
		return nil, notSent(err, "ZMTP handshake")
	}
	tr.Mark(salttrace.Handshaken)
	if err := ctx.Err(); err != nil {
		return nil, notSent(err, "context done before sending")
	}
	msg := append([]byte{zmtpFlagMore, 0}, zmtpFrame(0, body)...)
	n, err := nc.Write(msg)
	if err != nil {
		err = withCtxCause(ctx, err)
		if n == 0 {
			return nil, notSent(err, "send")
		}
		return nil, outcomeUnknown(err, "send")
	}
	tr.Mark(salttrace.Sent)
	reply, err := zc.readReply(maxReply)
	if err != nil {
		err = withCtxCause(ctx, err)
		return nil, outcomeUnknown(err, "waiting for reply")
	}
	tr.Mark(salttrace.Replied)
	return reply, nil
}

// withCtxCause attaches the context's error (cancellation, or the deadline
// that the socket deadline mirrors) to a transport error.
func withCtxCause(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return errors.CombineErrors(ctx.Err(), err)
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return errors.CombineErrors(context.DeadlineExceeded, err)
	}
	return err
}

// deadlineFor returns the earlier of ctx's deadline and now+timeout.
func deadlineFor(ctx context.Context, timeout time.Duration) (context.Context, context.CancelFunc) {
	if timeout <= 0 {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, timeout)
}

// Connection reuse (opt-in, WithConnectionReuse). Without it every request has its own
// connection, as Salt's 3006.0 client does. With it, a connection goes back to an idle pool only
// after a complete exchange (request sent, whole reply read and within its cap), and before it
// carries another request it must prove it is alive: a ZMTP PING answered by a PONG with the
// same context. Any error, timeout or doubt closes it. A connection that fails the proof has sent
// nothing of the request, which then goes on a fresh connection exactly as without reuse (a
// refused dial is ErrNotSent). A request sent without a reply is ErrOutcomeUnknown as always:
// nothing is ever resent.

const (
	// maxIdleConns bounds the idle pool of one Client: enough for the concurrency at which one
	// master saturates (its worker_threads, a few dozen callers), so that those callers do not
	// each pay a new connection (about half a millisecond of the master's CPU too).
	maxIdleConns = 32
	// pingTimeout bounds the liveness proof (never beyond the request's own deadline).
	pingTimeout = time.Second
	// pingContext is echoed by the PONG (ZMTP 3.1 allows up to 16 bytes).
	pingContext = "oduflow-alive"
)

// connPool holds idle connections of one Client.
type connPool struct {
	mu     sync.Mutex
	idle   []*zmtpConn
	closed bool
}

func (p *connPool) get() *zmtpConn {
	p.mu.Lock()
	defer p.mu.Unlock()
	if n := len(p.idle); n > 0 {
		zc := p.idle[n-1]
		p.idle = p.idle[:n-1]
		return zc
	}
	return nil
}

// put keeps zc for a later request, or closes it when the pool is full or closed.
func (p *connPool) put(zc *zmtpConn) {
	p.mu.Lock()
	if !p.closed && len(p.idle) < maxIdleConns {
		p.idle = append(p.idle, zc)
		p.mu.Unlock()
		return
	}
	p.mu.Unlock()
	_ = zc.nc.Close()
}

func (p *connPool) close() {
	p.mu.Lock()
	idle := p.idle
	p.idle, p.closed = nil, true
	p.mu.Unlock()
	for _, zc := range idle {
		_ = zc.nc.Close()
	}
}

// proveAlive sends a PING and waits for its PONG, answering the peer's own PINGs meanwhile.
// Anything else (a message frame, an ERROR, a wrong context, silence) is a doubt: error.
func (c *zmtpConn) proveAlive(ctx context.Context) error {
	dl := time.Now().Add(pingTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(dl) {
		dl = d
	}
	if err := c.nc.SetDeadline(dl); err != nil {
		return err
	}
	if _, err := c.nc.Write(zmtpCommand("PING", append([]byte{0, 0}, pingContext...))); err != nil {
		return err
	}
	for {
		flags, body, err := c.readFrame(maxCommandBytes)
		if err != nil {
			return err
		}
		if flags&zmtpFlagCommand == 0 {
			return errors.Wrap(errProtocol, "message frame on an idle connection")
		}
		name, data, err := parseCommand(body)
		if err != nil {
			return err
		}
		switch name {
		case "PONG":
			if string(data) != pingContext {
				return errors.Wrap(errProtocol, "PONG with another context")
			}
			return nil
		case "PING", "ERROR":
			if err := c.handleCommand(body); err != nil {
				return err
			}
		}
	}
}

// exchange sends body on zc and reads the reply, with ctx's deadline and cancellation. reusable
// reports whether the exchange completed cleanly and zc may be pooled.
func (zc *zmtpConn) exchange(ctx context.Context, body []byte, maxReply int64, tr *salttrace.Trace) (reply []byte, reusable bool, err error) {
	stop := context.AfterFunc(ctx, func() { _ = zc.nc.Close() })
	defer func() {
		if !stop() {
			reusable = false // the connection was closed under us
		}
	}()
	dl, _ := ctx.Deadline() // zero: no deadline
	if err := zc.nc.SetDeadline(dl); err != nil {
		return nil, false, notSent(err, "connection deadline")
	}
	if err := ctx.Err(); err != nil {
		return nil, false, notSent(err, "context done before sending")
	}
	msg := append([]byte{zmtpFlagMore, 0}, zmtpFrame(0, body)...)
	n, err := zc.nc.Write(msg)
	if err != nil {
		err = withCtxCause(ctx, err)
		if n == 0 {
			return nil, false, notSent(err, "send")
		}
		return nil, false, outcomeUnknown(err, "send")
	}
	tr.Mark(salttrace.Sent)
	reply, err = zc.readReply(maxReply)
	if err != nil {
		return nil, false, outcomeUnknown(withCtxCause(ctx, err), "waiting for reply")
	}
	tr.Mark(salttrace.Replied)
	// a clean exchange leaves nothing unread: bytes already buffered would be a doubt
	return reply, zc.br.Buffered() == 0, nil
}

// pooledRoundTrip is roundTrip with connection reuse.
func pooledRoundTrip(ctx context.Context, pool *connPool, ep reqEndpoint, body []byte, maxReply int64, tr *salttrace.Trace) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, notSent(err, "context done before dialing")
	}
	zc := pool.get()
	if zc != nil {
		if err := zc.proveAlive(ctx); err != nil {
			_ = zc.nc.Close() // dead or doubtful; nothing of the request was sent on it
			zc = nil
		} else {
			tr.Mark(salttrace.Proven)
		}
	}
	if zc == nil {
		var err error
		if zc, err = dialZMTP(ctx, ep, tr); err != nil {
			return nil, err
		}
	}
	reply, reusable, err := zc.exchange(ctx, body, maxReply, tr)
	if err != nil || !reusable {
		_ = zc.nc.Close()
		return reply, err
	}
	pool.put(zc)
	return reply, nil
}

// dialZMTP opens a connection and performs the handshake within ctx; every failure is ErrNotSent.
func dialZMTP(ctx context.Context, ep reqEndpoint, tr *salttrace.Trace) (*zmtpConn, error) {
	var d net.Dialer
	nc, err := d.DialContext(ctx, ep.network, ep.address)
	if err != nil {
		return nil, notSent(err, "dial")
	}
	tr.Mark(salttrace.Connected)
	stop := context.AfterFunc(ctx, func() { _ = nc.Close() })
	dl, _ := ctx.Deadline()
	_ = nc.SetDeadline(dl)
	zc, err := zmtpHandshake(nc)
	if !stop() && err == nil {
		err = ctx.Err()
	}
	if err != nil {
		_ = nc.Close()
		return nil, notSent(withCtxCause(ctx, err), "ZMTP handshake")
	}
	tr.Mark(salttrace.Handshaken)
	return zc, nil
}
