package salttest

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"io"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/oduflow/oduflow-go/internal/saltwire"
)

// rawPeer is a hand-driven ZMTP peer for protocol edge cases.
type rawPeer struct {
	t *testing.T
	c net.Conn
	z *zconn
}

func dialRaw(t *testing.T, s *Master, socketType string) *rawPeer {
	t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(s.Addr(), "tcp://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	p := &rawPeer{t: t, c: c, z: &zconn{nc: c, r: bufio.NewReader(c), maxSize: 1 << 20}}
	if _, err := c.Write(saltwire.Greeting()); err != nil {
		t.Fatal(err)
	}
	var g [64]byte
	if _, err := io.ReadFull(p.z.r, g[:]); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(g[:], saltwire.Greeting()) {
		t.Errorf("greeting %x", g)
	}
	ready := zcommand("READY", append(saltwire.AppendProperty(nil, "Socket-Type", socketType), saltwire.AppendProperty(nil, "Identity", "")...))
	if err := p.z.writeFrames(true, ready); err != nil {
		t.Fatal(err)
	}
	fl, body, err := p.z.readFrame()
	if err != nil || fl != saltwire.FlagCommand || !bytes.HasPrefix(body, []byte("\x05READY")) {
		t.Fatalf("server READY: %x %q %v", fl, body, err)
	}
	return p
}

func TestZMTPPingPongAndDealer(t *testing.T) {
	s := startLab(t)
	p := dialRaw(t, s, "DEALER")
	// a client PING gets a PONG echoing the context
	if err := p.z.writeFrames(true, zcommand("PING", []byte{0, 10, 'c', 't', 'x'})); err != nil {
		t.Fatal(err)
	}
	fl, body, err := p.z.readFrame()
	if err != nil || fl != saltwire.FlagCommand || string(body) != "\x04PONGctx" {
		t.Fatalf("PONG: %x %q %v", fl, body, err)
	}
	// DEALER with a routing envelope: the reply keeps it; a body over 255 bytes uses LONG frames
	big := strings.Repeat("x", 300)
	req := envelope(t, 3, "cmd", "ping", "big", big)
	if err := p.z.writeFrames(false, []byte("route"), nil, req); err != nil {
		t.Fatal(err)
	}
	frames, err := p.z.readMessage()
	if err != nil || len(frames) != 3 || string(frames[0]) != "route" || len(frames[1]) != 0 {
		t.Fatalf("reply frames %q %v", frames, err)
	}
	v, err := unpack(frames[2])
	if err != nil || mget(t, v, "big") != big {
		t.Errorf("reply %v %v", v, err)
	}
	// the server's PING reaches the peer, whose PONG is accepted
	if n := s.heartbeat(); n != 1 {
		t.Errorf("heartbeat peers = %d", n)
	}
	fl, body, err = p.z.readFrame()
	if err != nil || fl != saltwire.FlagCommand || !bytes.HasPrefix(body, []byte("\x04PING")) {
		t.Fatalf("PING: %x %q %v", fl, body, err)
	}
	if err := p.z.writeFrames(true, zcommand("PONG", nil)); err != nil {
		t.Fatal(err)
	}
	// a message without delimiter is dropped, the connection stays usable
	if err := p.z.writeFrames(false, req); err != nil {
		t.Fatal(err)
	}
	if err := p.z.writeFrames(false, nil, envelope(t, 3, "cmd", "ping")); err != nil {
		t.Fatal(err)
	}
	frames, err = p.z.readMessage()
	if err != nil || len(frames) != 2 {
		t.Fatalf("after dropped message: %q %v", frames, err)
	}
}

func TestZMTPRejects(t *testing.T) {
	s := startLab(t, withMaxRequestBytes(1024))
	// incompatible socket type: the server hangs up after READY
	p := dialRaw(t, s, "PUB")
	if _, _, err := p.z.readFrame(); err == nil {
		t.Error("PUB peer accepted")
	}
	// oversized frame: connection dropped
	p = dialRaw(t, s, "REQ")
	hdr := []byte{saltwire.FlagMore, 0, saltwire.FlagLong}
	hdr = binary.BigEndian.AppendUint64(hdr, 1<<30)
	if _, err := p.c.Write(hdr); err != nil {
		t.Fatal(err)
	}
	if _, _, err := p.z.readFrame(); err == nil {
		t.Error("oversized frame accepted")
	}
	// bad greeting
	c, err := net.Dial("tcp", strings.TrimPrefix(s.Addr(), "tcp://"))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Close() }()
	_, _ = c.Write(bytes.Repeat([]byte{0x42}, 64))
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.ReadAll(c); err != nil {
		t.Errorf("server did not hang up cleanly: %v", err)
	}
}

func TestLongDirRejected(t *testing.T) {
	dir := filepath.Join(shortDir(t), strings.Repeat("d", 100))
	if err := mkdir(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := Start(t.Context(), WithDir(dir)); err == nil || !strings.Contains(err.Error(), "limit") {
		t.Errorf("err = %v", err)
	}
}

func FuzzUnpack(f *testing.F) {
	for _, name := range []string{"00_clear_ping.request.bin", "03c_wheel_eauth_key_list_all.reply.bin",
		"10_publish_state_high.request.bin"} {
		f.Add(readTestdataF(f, "clear", name))
	}
	f.Add([]byte{0xdf, 0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := unpack(b)
		if err != nil {
			return
		}
		out, err := packSalt(v)
		if err != nil {
			t.Fatalf("re-encode: %v", err)
		}
		if _, err := unpack(out); err != nil {
			t.Fatalf("re-decode: %v", err)
		}
	})
}

// TestAbandonedRequestStillPublished: like the lab's master, the simulator finishes a request
// whose client hung up right after sending it.
func TestAbandonedRequestStillPublished(t *testing.T) {
	s := startLab(t)
	p := dialRaw(t, s, "REQ")
	if err := p.z.writeFrames(false, nil, envelope(t, 3, pingLoad("20261129170000000040")...)); err != nil {
		t.Fatal(err)
	}
	_ = p.c.Close()
	waitSim(t, s, "abandoned publish never published", func() bool { return s.PublicationCount("test.ping", "") > 0 })
}
