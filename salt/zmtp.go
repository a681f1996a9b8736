package salt

// A minimal ZMTP 3.1 REQ peer (NULL mechanism) over net.Conn.
//
// Why not zmq4's REQ socket: in go-zeromq/zmq4 v0.17.0 (req.go reqReader.read,
// conn.go Conn.read) a REQ socket (1) hands ZMTP command frames such as PING
// to the application as if they were the reply and never answers PONG, so a
// master with ZMTP heartbeats (later 3006 releases) can drop a slow request's
// connection; (2) allocates whatever frame size the peer announces before
// reading it, so no reply size cap can be enforced; (3) has no deadline on
// Recv and cannot be reused after a lost reply; (4) panics on some malformed
// READY properties. One request per connection needs only a small subset of
// ZMTP, so this file implements it directly on the framing of
// internal/saltwire (shared with the simulator's ROUTER): greeting, READY, one
// request [empty delimiter, body], one reply, PING answered with PONG, every
// length checked before allocation. Interoperability is tested against zmq4's ROUTER
// (tests, simulator) and against libzmq 4.3 (the Salt 3006.0 lab master).

import (
	"bufio"
	"io"
	"net"

	"github.com/cockroachdb/errors"

	"github.com/oduflow/oduflow-go/internal/saltwire"
)

// The framing is internal/saltwire's (shared with the simulator); the REQ peer's decisions are
// here.
const (
	zmtpFlagMore    = saltwire.FlagMore
	zmtpFlagCommand = saltwire.FlagCommand
	// maxCommandBytes caps READY/PING/ERROR command frames.
	maxCommandBytes = saltwire.MaxCommandBytes
	// maxReplyFrames caps the frames of one reply message. A Salt reply has
	// two ([delimiter, body]); without a cap a peer could stream empty MORE
	// frames, each costing memory but no reply bytes, until the timeout.
	maxReplyFrames = 16
)

// zmtpGreeting is our 64-byte ZMTP 3.1 NULL greeting (as-server = 0).
func zmtpGreeting() []byte { return saltwire.Greeting() }

// zmtpCommand encodes a command frame.
func zmtpCommand(name string, data []byte) []byte { return saltwire.Command(name, data) }

// zmtpFrame encodes one frame with the given flags (MORE/COMMAND).
func zmtpFrame(flags byte, body []byte) []byte {
	return saltwire.AppendFrame(make([]byte, 0, 9+len(body)), flags, body)
}

// zmtpOpening is what a REQ peer sends first: its greeting and its READY.
func zmtpOpening() []byte { return append(saltwire.Greeting(), saltwire.Ready("REQ")...) }

func parseCommand(body []byte) (string, []byte, error) { return saltwire.ParseCommand(body) }

// zmtpConn is one REQ connection, owned by exactly one goroutine.
type zmtpConn struct {
	nc net.Conn
	br *bufio.Reader
}

// zmtpHandshake exchanges greetings and READY, and checks that the peer is a
// ROUTER or REP socket. Our greeting and our READY leave in one write (one
// round trip instead of two): ZMTP 3 lets a peer that offers only 3.x NULL
// send its whole greeting at once and its READY right after it, and READY
// carries nothing of a request. The request itself is sent only after the
// peer's greeting and READY were checked.
func zmtpHandshake(nc net.Conn) (*zmtpConn, error) {
	c := &zmtpConn{nc: nc, br: bufio.NewReaderSize(nc, 4096)}
	if _, err := nc.Write(zmtpOpening()); err != nil {
		return nil, err
	}
	var g [saltwire.GreetingSize]byte
	if _, err := io.ReadFull(c.br, g[:]); err != nil {
		return nil, errors.Wrap(err, "reading ZMTP greeting")
	}
	if err := saltwire.CheckGreeting(g[:]); err != nil {
		return nil, err
	}
	flags, body, err := c.readFrame(maxCommandBytes)
	if err != nil {
		return nil, errors.Wrap(err, "reading ZMTP READY")
	}
	props, err := saltwire.ParseReady(flags, body)
	if err != nil {
		return nil, err
	}
	st := props["socket-type"]
	if st != "ROUTER" && st != "REP" {
		return nil, errors.Wrapf(errProtocol, "peer socket type %q is not ROUTER/REP", errors.Safe(st))
	}
	return c, nil
}

// readFrame reads one frame, refusing bodies larger than limit before
// allocating them.
func (c *zmtpConn) readFrame(limit int64) (byte, []byte, error) {
	flags, body, err := saltwire.ReadFrame(c.br, uint64(max(limit, 0)))
	var big *saltwire.FrameTooLargeError
	if errors.As(err, &big) {
		return flags, nil, errors.Wrapf(errReplyTooLarge, "frame of %d bytes exceeds limit %d", errors.Safe(big.Size), errors.Safe(big.Limit))
	}
	return flags, body, err
}

// readReply reads one reply message [empty delimiter, body...] and returns
// its first body frame. Command frames in between are handled: PING gets a
// PONG and is never mistaken for the reply; ERROR fails; others are ignored.
// maxBytes caps the sum of the body frames, maxReplyFrames their number;
// frames after the first body frame are read and dropped.
func (c *zmtpConn) readReply(maxBytes int64) ([]byte, error) {
	var first, body []byte
	var total int64
	n := 0
	for {
		flags, b, err := c.readFrame(maxBytes - total)
		if err != nil {
			return nil, err
		}
		if flags&zmtpFlagCommand != 0 {
			if n > 0 {
				return nil, errors.Wrap(errProtocol, "command frame inside a message")
			}
			if err := c.handleCommand(b); err != nil {
				return nil, err
			}
			continue
		}
		if n == maxReplyFrames {
			return nil, errors.Wrapf(errProtocol, "reply has more than %d frames", errors.Safe(maxReplyFrames))
		}
		total += int64(len(b))
		switch n {
		case 0:
			first = b
		case 1:
			body = b
		}
		n++
		if flags&zmtpFlagMore == 0 {
			break
		}
	}
	if n < 2 || len(first) != 0 {
		return nil, errors.Wrapf(errProtocol, "reply is not [delimiter, body] (%d frames)", errors.Safe(n))
	}
	return body, nil
}

func (c *zmtpConn) handleCommand(body []byte) error {
	name, data, err := parseCommand(body)
	if err != nil {
		return err
	}
	switch name {
	case "PING":
		// PING: 2-byte TTL, then up to 16 bytes of context echoed in PONG.
		pctx, err := saltwire.PingContext(data)
		if err != nil {
			return err
		}
		_, err = c.nc.Write(zmtpCommand("PONG", pctx))
		return err
	case "ERROR":
		return errors.Wrap(errProtocol, "peer sent ERROR")
	}
	return nil // PONG, SUBSCRIBE, unknown commands: ignore
}
