package salt_test

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/oduflow/oduflow-go/salt"
)

// mustEventFrame encodes a bare {head, body} event frame as Salt 3006.0 writes it, whose data
// holds 50 integers and a string of pad bytes.
func mustEventFrame(t testing.TB, tag string, pad int) []byte {
	t.Helper()
	ints := make([]any, 50)
	for i := range ints {
		ints[i] = i
	}
	data, err := salt.EncodeValue(map[string]any{"ints": ints, "pad": strings.Repeat("x", pad)})
	if err != nil {
		t.Fatal(err)
	}
	return eventFrameOf(t, tag, data)
}

// eventFrameOf wraps the msgpack data of an event into a bare frame.
func eventFrameOf(t testing.TB, tag string, data []byte) []byte {
	t.Helper()
	body := append([]byte(tag+"\n\n"), data...)
	// {head: {}, body: <bin 32>} written by hand: EncodeValue would encode a string as str, Salt
	// 3006.0 writes the body as bin
	frame := []byte{0x82, 0xa4, 'h', 'e', 'a', 'd', 0x80, 0xa4, 'b', 'o', 'd', 'y', 0xc6,
		byte(len(body) >> 24), byte(len(body) >> 16), byte(len(body) >> 8), byte(len(body))}
	return append(frame, body...)
}

// serveEventBytes listens on a unix socket and writes data to every connection, then keeps the
// connection open without writing anything more (until the test ends). It returns the
// unix:// address.
func serveEventBytes(t testing.TB, data []byte) string {
	t.Helper()
	return serveEventConn(t, func(nc net.Conn) { _, _ = nc.Write(data) })
}

// serveEventConn listens on a unix socket and runs serve for every connection, which stays open
// until the test ends.
func serveEventConn(t testing.TB, serve func(net.Conn)) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "ev") // unix socket paths must stay short
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "bus.ipc")
	ln, err := net.Listen("unix", p)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, nc)
			mu.Unlock()
			go serve(nc)
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		<-done
		mu.Lock()
		for _, c := range conns {
			_ = c.Close()
		}
		mu.Unlock()
		_ = os.RemoveAll(dir)
	})
	return "unix://" + p
}
