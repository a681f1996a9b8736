package salttest

// Why this file exists: the fake master's ROUTER is written here, not taken from
// github.com/go-zeromq/zmq4 (which this package's tests use as an independent REQ client),
// because zmq4's ROUTER cannot do what the fake master must: send ZMTP PING commands to its
// peers unprompted (later 3006 masters do), drop, delay or truncate one chosen reply while the
// connection stays up, and reproduce the captured master's byte stream (greeting with libzmq's
// padding, READY ROUTER) exactly. The frames are internal/saltwire's, the client's own; the
// ROUTER's behaviour is written here. It is a minimal ZMTP 3.1 ROUTER over NULL security,
// enough to serve REQ (and DEALER) peers the way the master's ret_port ROUTER does: greeting,
// READY with Socket-Type ROUTER, multipart messages routed back to the connection they came
// from, PING/PONG commands.

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net"
	"sync"
	"time"

	"github.com/cockroachdb/errors"

	"github.com/oduflow/oduflow-go/internal/saltwire"
)

const (
	handshakeTimeout = 10 * time.Second
	writeTimeout     = 10 * time.Second
)

// zcommand builds a command body: name length, name, data.
func zcommand(name string, data []byte) []byte {
	b := append([]byte{byte(len(name))}, name...)
	return append(b, data...)
}

// zconn is one peer connection of the ROUTER.
type zconn struct {
	nc      net.Conn
	r       *bufio.Reader
	maxSize uint64
	wmu     sync.Mutex
	pongs   int
	closeMu sync.Once
}

func (c *zconn) close() { c.closeMu.Do(func() { _ = c.nc.Close() }) }

// writeFrames writes frames atomically with respect to other writers on this connection.
func (c *zconn) writeFrames(cmd bool, frames ...[]byte) error {
	var buf []byte
	if cmd {
		for _, f := range frames {
			buf = saltwire.AppendFrame(buf, saltwire.FlagCommand, f)
		}
	} else {
		buf = saltwire.AppendMessage(buf, frames...)
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_ = c.nc.SetWriteDeadline(time.Now().Add(writeTimeout))
	_, err := c.nc.Write(buf)
	return err
}

// readFrame reads one frame; it returns its flags and body.
func (c *zconn) readFrame() (byte, []byte, error) { return saltwire.ReadFrame(c.r, c.maxSize) }

// handshake exchanges greetings and READY commands with a REQ or DEALER peer.
func (c *zconn) handshake() error {
	_ = c.nc.SetDeadline(time.Now().Add(handshakeTimeout))
	defer func() { _ = c.nc.SetDeadline(time.Time{}) }()
	if _, err := c.nc.Write(saltwire.Greeting()); err != nil {
		return err
	}
	var peer [saltwire.GreetingSize]byte
	if _, err := io.ReadFull(c.r, peer[:]); err != nil {
		return err
	}
	if err := saltwire.CheckGreeting(peer[:]); err != nil {
		return err
	}
	ready := zcommand("READY", saltwire.AppendProperty(saltwire.AppendProperty(nil, "Socket-Type", "ROUTER"), "Identity", ""))
	if err := c.writeFrames(true, ready); err != nil {
		return err
	}
	fl, body, err := c.readFrame()
	if err != nil {
		return err
	}
	props, err := saltwire.ParseReady(fl, body)
	if err != nil {
		return err
	}
	switch props["socket-type"] {
	case "REQ", "DEALER":
		return nil
	}
	return errors.Wrap(saltwire.ErrProtocol, "incompatible peer socket type")
}

// readMessage returns the next multipart message, answering PING commands on the way.
func (c *zconn) readMessage() ([][]byte, error) {
	var frames [][]byte
	for {
		fl, body, err := c.readFrame()
		if err != nil {
			return nil, err
		}
		if fl&saltwire.FlagCommand != 0 {
			name, data, err := saltwire.ParseCommand(body)
			if err != nil {
				return nil, err
			}
			switch name {
			case "PING":
				// PING: TTL (2 bytes), then up to 16 bytes of context echoed in PONG.
				ctxData := []byte{}
				if len(data) > 2 {
					ctxData = data[2:]
				}
				if err := c.writeFrames(true, zcommand("PONG", ctxData)); err != nil {
					return nil, err
				}
			case "PONG":
				c.wmu.Lock()
				c.pongs++
				c.wmu.Unlock()
			}
			continue
		}
		frames = append(frames, body)
		if fl&saltwire.FlagMore == 0 {
			return frames, nil
		}
	}
}

// ping sends a ZMTP heartbeat PING (TTL 0, no context) to the peer.
func (c *zconn) ping() error {
	return c.writeFrames(true, zcommand("PING", []byte{0, 0}))
}

// zrouter accepts connections and hands each complete request (envelope split off) to handle.
type zrouter struct {
	ln      net.Listener
	maxSize uint64
	handle  func(c *zconn, envelope [][]byte, body []byte)
	onErr   func(err error)

	mu    sync.Mutex
	conns map[*zconn]struct{}
	wg    sync.WaitGroup
}

func newZRouter(ln net.Listener, maxSize uint64, handle func(*zconn, [][]byte, []byte), onErr func(error)) *zrouter {
	z := &zrouter{ln: ln, maxSize: maxSize, handle: handle, onErr: onErr, conns: map[*zconn]struct{}{}}
	z.wg.Add(1)
	go z.acceptLoop()
	return z
}

func (z *zrouter) acceptLoop() {
	defer z.wg.Done()
	for {
		nc, err := z.ln.Accept()
		if err != nil {
			return
		}
		c := &zconn{nc: nc, r: bufio.NewReader(nc), maxSize: z.maxSize}
		z.mu.Lock()
		if z.conns == nil {
			z.mu.Unlock()
			_ = nc.Close()
			return
		}
		z.conns[c] = struct{}{}
		z.mu.Unlock()
		z.wg.Add(1)
		go z.serve(c)
	}
}

func (z *zrouter) serve(c *zconn) {
	defer z.wg.Done()
	defer func() {
		c.close()
		z.mu.Lock()
		delete(z.conns, c)
		z.mu.Unlock()
	}()
	if err := c.handshake(); err != nil {
		z.onErr(errors.Wrap(err, "handshake"))
		return
	}
	for {
		frames, err := c.readMessage()
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				z.onErr(err)
			}
			return
		}
		// ROUTER semantics: the envelope runs up to and including the empty delimiter.
		delim := -1
		for i, f := range frames {
			if len(f) == 0 {
				delim = i
				break
			}
		}
		if delim < 0 || delim == len(frames)-1 {
			continue // no delimiter or no body: libzmq's REP side would drop it
		}
		z.handle(c, frames[:delim+1], bytes.Join(frames[delim+1:], nil))
	}
}

// heartbeat sends a PING to every connected peer and returns how many were sent.
func (z *zrouter) heartbeat() int {
	z.mu.Lock()
	conns := make([]*zconn, 0, len(z.conns))
	for c := range z.conns {
		conns = append(conns, c)
	}
	z.mu.Unlock()
	n := 0
	for _, c := range conns {
		if c.ping() == nil {
			n++
		}
	}
	return n
}

// close stops accepting, drops every connection and waits for the connection goroutines.
func (z *zrouter) close(ctx context.Context) {
	_ = z.ln.Close()
	z.mu.Lock()
	for c := range z.conns {
		c.close()
	}
	z.conns = nil
	z.mu.Unlock()
	done := make(chan struct{})
	go func() { z.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
	}
}
