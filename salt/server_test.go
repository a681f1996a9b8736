package salt

import (
	"bufio"
	"context"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zeromq/zmq4"

	"github.com/oduflow/oduflow-go/internal/saltwire"
)

// rawRouter is a hand-written ZMTP ROUTER for fault injection: for every
// connection it performs the handshake, reads one request and calls handle.
type rawRouter struct {
	ln       net.Listener
	requests atomic.Int64
	wg       sync.WaitGroup
}

type rawConn struct {
	*zmtpConn
	t *testing.T
}

// request reads one [delimiter, body] request; PONGs are returned as "PONG".
func (c *rawConn) request() ([]byte, error) {
	for {
		flags, body, err := c.readFrame(1 << 20)
		if err != nil {
			return nil, err
		}
		if flags&zmtpFlagCommand != 0 {
			name, _, _ := parseCommand(body)
			if name == "PONG" {
				return []byte("PONG"), nil
			}
			continue
		}
		if len(body) != 0 || flags&zmtpFlagMore == 0 {
			return nil, io.ErrUnexpectedEOF
		}
		_, req, err := c.readFrame(1 << 20)
		return req, err
	}
}

func (c *rawConn) reply(body []byte) error {
	_, err := c.nc.Write(append([]byte{zmtpFlagMore, 0}, zmtpFrame(0, body)...))
	return err
}

func (c *rawConn) ping(ctxData []byte) error {
	_, err := c.nc.Write(zmtpCommand("PING", append([]byte{0, 10}, ctxData...)))
	return err
}

func startRawRouter(t *testing.T, handle func(c *rawConn, req []byte)) (*rawRouter, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &rawRouter{ln: ln}
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			r.wg.Add(1)
			go func() {
				defer r.wg.Done()
				defer nc.Close()
				_ = nc.SetDeadline(time.Now().Add(10 * time.Second))
				if _, err := nc.Write(zmtpGreeting()); err != nil {
					return
				}
				zc := &zmtpConn{nc: nc, br: bufio.NewReader(nc)}
				var g [64]byte
				if _, err := io.ReadFull(zc.br, g[:]); err != nil {
					return
				}
				if _, err := nc.Write(saltwire.Ready("ROUTER")); err != nil {
					return
				}
				if _, _, err := zc.readFrame(1 << 16); err != nil { // READY
					return
				}
				c := &rawConn{zmtpConn: zc, t: t}
				req, err := c.request()
				if err != nil {
					return
				}
				r.requests.Add(1)
				handle(c, req)
			}()
		}
	}()
	t.Cleanup(func() { _ = ln.Close(); r.wg.Wait() })
	return r, "tcp://" + ln.Addr().String()
}

// zmqRouter is an in-test master built on zmq4's ROUTER socket: it decodes
// each request's load and replies with reply(load).
func startZmqRouter(t testing.TB, reply func(env map[string]any) any) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	sock := zmq4.NewRouter(ctx, zmq4.WithID(zmq4.SocketIdentity("router")))
	if err := sock.Listen("tcp://127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			msg, err := sock.Recv()
			if err != nil {
				return
			}
			if msg.Type == zmq4.CmdMsg || len(msg.Frames) < 3 {
				continue
			}
			v, err := decodeValue(msg.Frames[2])
			var out any = "bad load"
			if env, ok := v.(map[string]any); ok && err == nil {
				out = reply(env)
			}
			b, err := encodeSalt(out)
			if err != nil {
				b, _ = encodeSalt("bad load")
			}
			_ = sock.Send(zmq4.NewMsgFrom(msg.Frames[0], nil, b))
		}
	}()
	t.Cleanup(func() { cancel(); _ = sock.Close(); <-done })
	return "tcp://" + sock.Addr().String()
}
