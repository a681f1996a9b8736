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
// ZMTP, so this file implements it directly: greeting, READY, one request
// [empty delimiter, body], one reply, PING answered with PONG, every length
// checked before allocation. Interoperability is tested against zmq4's ROUTER
// (tests, simulator) and against libzmq 4.3 (the Salt 3006.0 lab master).

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"io"
	"net"
	"strings"

	"github.com/cockroachdb/errors"
)

const (
	zmtpFlagMore    = 0x01
	zmtpFlagLong    = 0x02
	zmtpFlagCommand = 0x04
	// maxCommandBytes caps READY/PING/ERROR command frames.
	maxCommandBytes = 64 << 10
	// maxReplyFrames caps the frames of one reply message. A Salt reply has
	// two ([delimiter, body]); without a cap a peer could stream empty MORE
	// frames, each costing memory but no reply bytes, until the timeout.
	maxReplyFrames = 16
)

// zmtpGreeting is our 64-byte ZMTP 3.1 NULL greeting (as-server = 0).
func zmtpGreeting() []byte {
	g := make([]byte, 64)
	g[0] = 0xff
	g[8] = 0x01 // as libzmq sends it (padding; peers ignore it)
	g[9] = 0x7f
	g[10], g[11] = 3, 1
	copy(g[12:32], "NULL")
	return g
}

// zmtpCommand encodes a command frame.
func zmtpCommand(name string, data []byte) []byte {
	body := make([]byte, 0, 1+len(name)+len(data))
	body = append(body, byte(len(name)))
	body = append(body, name...)
	body = append(body, data...)
	return zmtpFrame(zmtpFlagCommand, body)
}

// zmtpFrame encodes one frame with the given flags (MORE/COMMAND).
func zmtpFrame(flags byte, body []byte) []byte {
	var out []byte
	if len(body) > 255 {
		out = make([]byte, 0, 9+len(body))
		out = append(out, flags|zmtpFlagLong)
		out = binary.BigEndian.AppendUint64(out, uint64(len(body)))
	} else {
		out = make([]byte, 0, 2+len(body))
		out = append(out, flags, byte(len(body)))
	}
	return append(out, body...)
}

// zmtpOpening is what a REQ peer sends first: its greeting and its READY.
func zmtpOpening() []byte { return append(zmtpGreeting(), zmtpReady("REQ")...) }

func zmtpReady(socketType string) []byte {
	var p []byte
	prop := func(k, v string) {
		p = append(p, byte(len(k)))
		p = append(p, k...)
		p = binary.BigEndian.AppendUint32(p, uint32(len(v)))
		p = append(p, v...)
	}
	prop("Socket-Type", socketType)
	prop("Identity", "")
	return zmtpCommand("READY", p)
}

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
	var g [64]byte
	if _, err := io.ReadFull(c.br, g[:]); err != nil {
		return nil, errors.Wrap(err, "reading ZMTP greeting")
	}
	if g[0] != 0xff || g[9] != 0x7f {
		return nil, errors.Wrap(errProtocol, "peer is not a ZMTP endpoint")
	}
	if g[10] < 3 {
		return nil, errors.Wrapf(errProtocol, "peer speaks ZMTP %d.%d, need 3.x", errors.Safe(g[10]), errors.Safe(g[11]))
	}
	if mech := string(bytes.TrimRight(g[12:32], "\x00")); mech != "NULL" {
		return nil, errors.Wrapf(errProtocol, "peer security mechanism %q, want NULL", errors.Safe(mech))
	}
	flags, body, err := c.readFrame(maxCommandBytes)
	if err != nil {
		return nil, errors.Wrap(err, "reading ZMTP READY")
	}
	if flags&zmtpFlagCommand == 0 {
		return nil, errors.Wrap(errProtocol, "expected READY command")
	}
	name, data, err := parseCommand(body)
	if err != nil {
		return nil, err
	}
	if name == "ERROR" {
		return nil, errors.Wrap(errProtocol, "peer sent ERROR during handshake")
	}
	if name != "READY" {
		return nil, errors.Wrapf(errProtocol, "expected READY, got %q", errors.Safe(name))
	}
	props, err := parseProperties(data)
	if err != nil {
		return nil, err
	}
	st := props["socket-type"]
	if st != "ROUTER" && st != "REP" {
		return nil, errors.Wrapf(errProtocol, "peer socket type %q is not ROUTER/REP", errors.Safe(st))
	}
	return c, nil
}

func parseCommand(body []byte) (string, []byte, error) {
	if len(body) < 1 || int(body[0]) > len(body)-1 {
		return "", nil, errors.Wrap(errProtocol, "malformed command frame")
	}
	n := int(body[0])
	return string(body[1 : 1+n]), body[1+n:], nil
}

func parseProperties(p []byte) (map[string]string, error) {
	out := map[string]string{}
	for len(p) > 0 {
		kl := int(p[0])
		if len(p) < 1+kl+4 {
			return nil, errors.Wrap(errProtocol, "malformed READY property")
		}
		k := strings.ToLower(string(p[1 : 1+kl]))
		vl := binary.BigEndian.Uint32(p[1+kl : 5+kl])
		p = p[5+kl:]
		if uint64(vl) > uint64(len(p)) {
			return nil, errors.Wrap(errProtocol, "malformed READY property value")
		}
		out[k] = string(p[:vl])
		p = p[vl:]
	}
	return out, nil
}

// readFrame reads one frame, refusing bodies larger than limit before
// allocating them.
func (c *zmtpConn) readFrame(limit int64) (byte, []byte, error) {
	var hdr [2]byte
	if _, err := io.ReadFull(c.br, hdr[:]); err != nil {
		return 0, nil, err
	}
	flags := hdr[0]
	if flags&^(zmtpFlagMore|zmtpFlagLong|zmtpFlagCommand) != 0 {
		return 0, nil, errors.Wrapf(errProtocol, "reserved frame flags 0x%02x", errors.Safe(flags))
	}
	size := uint64(hdr[1])
	if flags&zmtpFlagLong != 0 {
		var rest [7]byte
		if _, err := io.ReadFull(c.br, rest[:]); err != nil {
			return 0, nil, err
		}
		size = binary.BigEndian.Uint64(append([]byte{hdr[1]}, rest[:]...))
	}
	if flags&zmtpFlagCommand != 0 && size > maxCommandBytes {
		return 0, nil, errors.Wrap(errProtocol, "command frame too large")
	}
	if size > uint64(limit) {
		return flags, nil, errors.Wrapf(errReplyTooLarge, "frame of %d bytes exceeds limit %d", errors.Safe(size), errors.Safe(limit))
	}
	body := make([]byte, size)
	if _, err := io.ReadFull(c.br, body); err != nil {
		return 0, nil, err
	}
	return flags, body, nil
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
		if len(data) < 2 || len(data) > 18 {
			return errors.Wrap(errProtocol, "malformed PING")
		}
		_, err := c.nc.Write(zmtpCommand("PONG", data[2:]))
		return err
	case "ERROR":
		return errors.Wrap(errProtocol, "peer sent ERROR")
	}
	return nil // PONG, SUBSCRIBE, unknown commands: ignore
}
