package salt_test

// Memory bound under hostile input: any authenticated minion can put any event on the master
// bus, and anything that answers on the request port can send any reply, so what a frame or a
// reply at its cap can make this process allocate must be bounded by the decode budgets, not by
// the wire bytes (one 15 MiB frame of empty arrays used to cost 643 MB of heap).
//
// How memory is measured: after runtime.GC(), a goroutine samples the runtime/metrics value
// "/memory/classes/heap/objects:bytes" (live and not yet swept heap objects: what the heap holds,
// garbage included, which is what grows the process) every millisecond, and the peak minus the
// value before the run is the growth. runtime.ReadMemStats would stop the world at every sample;
// HeapAlloc read only at the end would miss the peak. The race detector distorts allocations:
// the test is skipped under -race.

import (
	"bytes"
	"context"
	"encoding/binary"
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"strings"
	"testing"
	"time"

	"github.com/oduflow/oduflow-go/salt"
)

const memoryBound = 64 << 20

// measurePeakGrowth runs f and returns the peak heap growth during it.
func measurePeakGrowth(f func()) uint64 {
	const name = "/memory/classes/heap/objects:bytes"
	runtime.GC()
	s := []metrics.Sample{{Name: name}}
	metrics.Read(s)
	base := s[0].Value.Uint64()
	stop, done := make(chan struct{}), make(chan struct{})
	var peak uint64
	go func() {
		defer close(done)
		tk := time.NewTicker(time.Millisecond)
		defer tk.Stop()
		ss := []metrics.Sample{{Name: name}}
		for {
			metrics.Read(ss)
			peak = max(peak, ss[0].Value.Uint64())
			select {
			case <-stop:
				return
			case <-tk.C:
			}
		}
	}()
	f()
	close(stop)
	<-done
	if peak < base {
		return 0
	}
	return peak - base
}

// hostileShape is msgpack data of about size bytes (an event's data map, or a whole reply).
type hostileShape struct {
	name string
	make func(size int) []byte
}

func hostileShapes() []hostileShape {
	inMap := func(hdr []byte, fill func(b []byte, size int) []byte) func(int) []byte {
		return func(size int) []byte {
			b := append([]byte{0x81, 0xa1, 'a'}, hdr...)
			return fill(b, size)
		}
	}
	count := func(size, per int) int { return (size - 16) / per }
	repeat := func(b []byte, unit []byte, n int) []byte {
		return append(b, bytes.Repeat(unit, n)...)
	}
	return []hostileShape{
		{"arrays of empty arrays", func(size int) []byte {
			n := count(size, 1)
			return repeat(binary.BigEndian.AppendUint32([]byte{0x81, 0xa1, 'a', 0xdd}, uint32(n)), []byte{0x90}, n)
		}},
		{"nested arrays of empty arrays", func(size int) []byte {
			// 256 arrays of 65535 empty arrays each, and so on: many small charges
			n := count(size, 1) / 65536
			b := binary.BigEndian.AppendUint32([]byte{0x81, 0xa1, 'a', 0xdd}, uint32(n))
			for i := 0; i < n; i++ {
				b = repeat(append(b, 0xdc, 0xff, 0xff), []byte{0x90}, 65535)
			}
			return b
		}},
		{"maps of empty maps (duplicate keys)", func(size int) []byte {
			n := count(size, 2)
			return repeat(binary.BigEndian.AppendUint32([]byte{0x81, 0xa1, 'a', 0xdf}, uint32(n)), []byte{0xa0, 0x80}, n)
		}},
		{"map of distinct keys to empty maps", func(size int) []byte {
			n := count(size, 6)
			b := binary.BigEndian.AppendUint32([]byte{0x81, 0xa1, 'a', 0xdf}, uint32(n))
			for i := 0; i < n; i++ {
				b = binary.BigEndian.AppendUint32(append(b, 0xa4), uint32(i))
				b = append(b, 0x80)
			}
			return b
		}},
		{"array of one-entry maps", func(size int) []byte {
			n := count(size, 3)
			return repeat(binary.BigEndian.AppendUint32([]byte{0x81, 0xa1, 'a', 0xdd}, uint32(n)), []byte{0x81, 0xa0, 0xc0}, n)
		}},
		{"100k nesting", inMap(nil, func(b []byte, size int) []byte {
			return append(repeat(b, []byte{0x91}, 100000), 0xc0)
		})},
		{"declared lengths beyond the input", func(size int) []byte {
			// an array announcing 4 G items, then maps and strings announcing 4 G each
			b := []byte{0x81, 0xa1, 'a', 0xdd, 0xff, 0xff, 0xff, 0xff}
			for len(b) < size-16 {
				b = append(b, 0xdf, 0xff, 0xff, 0xff, 0xfe, 0xdb, 0xff, 0xff, 0xff, 0xf0)
			}
			return b
		}},
		{"one huge str", func(size int) []byte {
			n := count(size, 1)
			return append(binary.BigEndian.AppendUint32([]byte{0x81, 0xa1, 'a', 0xdb}, uint32(n)), strings.Repeat("s", n)...)
		}},
	}
}

// capFrame is a bare event frame of at most DefaultMaxFrameBytes whose data is shape.
func capFrame(t testing.TB, tag string, shape hostileShape) []byte {
	f := eventFrameOf(t, tag, shape.make(salt.DefaultMaxFrameBytes-64-len(tag)))
	if len(f) > salt.DefaultMaxFrameBytes {
		t.Fatalf("%s: frame of %d bytes over the cap", shape.name, len(f))
	}
	return f
}

// headPaddedFrame is the worst frame that decodes: at the cap, its head full of bytes the
// decoder skips (but the event keeps alive: its strings alias the frame text), its data one
// string just under the default decode budget.
func headPaddedFrame(t testing.TB, tag string) []byte {
	str := salt.DefaultEventDecodeMaxBytes - 4096
	data := append(binary.BigEndian.AppendUint32([]byte{0x81, 0xa1, 'a', 0xdb}, uint32(str)), strings.Repeat("s", str)...)
	body := append([]byte(tag+"\n\n"), data...)
	pad := salt.DefaultMaxFrameBytes - len(body) - 64
	f := []byte{0x82, 0xa4, 'h', 'e', 'a', 'd', 0x81, 0xa3, 'p', 'a', 'd', 0xc6}
	f = binary.BigEndian.AppendUint32(f, uint32(pad))
	f = append(f, make([]byte, pad)...)
	f = append(f, 0xa4, 'b', 'o', 'd', 'y', 0xc6)
	f = binary.BigEndian.AppendUint32(f, uint32(len(body)))
	return append(f, body...)
}

// TestEventStreamMemoryBound: four frames at the cap of each hostile shape, behind a consumer
// that reads nothing until they all went through the reader, in both framings, for a matching
// tag and for a non-matching one, grow the process by at most 64 MiB with the default options.
func TestEventStreamMemoryBound(t *testing.T) {
	// Not parallel: it measures the heap of the whole process.
	if raceEnabled {
		t.Skip("memory measurement skipped under -race: the race detector distorts allocations")
	}
	if testing.Short() {
		t.Skip("short")
	}
	type input struct {
		name  string
		frame func() []byte
	}
	var inputs []input
	for _, sh := range hostileShapes() {
		inputs = append(inputs,
			input{sh.name, func() []byte { return capFrame(t, "salt/job/x/ret/m", sh) }},
			input{sh.name + ", tag not matching", func() []byte { return capFrame(t, "other/x", sh) }})
	}
	inputs = append(inputs, input{"head padding and a string under the budget", func() []byte { return headPaddedFrame(t, "salt/job/x/ret/m") }})
	end := eventFrameOf(t, "salt/test/end", []byte{0x80})
	for _, in := range inputs {
		for _, prefixed := range []bool{false, true} {
			name := in.name + map[bool]string{false: ", bare", true: ", length-prefixed"}[prefixed]
			t.Run(name, func(t *testing.T) {
				frame := in.frame()
				var stream [][]byte
				for i := 0; i < 5; i++ {
					f := frame
					if i == 4 {
						f = end
					}
					if prefixed {
						stream = append(stream, binary.BigEndian.AppendUint32(nil, uint32(len(f))))
					}
					stream = append(stream, f)
				}
				path := offHeap(t, stream...)
				frame, stream = nil, nil
				sent := make(chan struct{})
				addr := serveEventConn(t, func(nc net.Conn) {
					copyFile(nc, path)
					close(sent)
				})
				var events, gaps int
				var gapErrs []error
				growth := measurePeakGrowth(func() {
					s, err := salt.SubscribeEvents(context.Background(), addr, salt.WithTagPrefixes("salt/"),
						salt.WithReconnectBackoff(time.Hour, time.Hour))
					if err != nil {
						t.Error(err)
						return
					}
					defer s.Close()
					select { // the slow consumer: nothing read until the server wrote everything
					case <-sent:
					case <-time.After(60 * time.Second):
						t.Error("server could not write the frames")
						return
					}
					// the slow consumer keeps not reading (the reader meanwhile refuses the stream over its cap): behaviour
					time.Sleep(100 * time.Millisecond)
					deadline := time.After(60 * time.Second)
					for {
						select {
						case ev := <-s.Events():
							if ev.Kind() == salt.EventGap {
								gaps++
								gapErrs = append(gapErrs, ev.Gap.Err)
								if strings.Contains(ev.Gap.Reason, salt.GapReasonDisconnected) {
									return // the frame reader refused the stream (over the cap)
								}
								continue
							}
							events++
							if ev.Tag == "salt/test/end" {
								return
							}
						case <-deadline:
							t.Error("the end event never came")
							return
						}
					}
				})
				t.Logf("peak heap growth %.1f MiB (events %d, gaps %d %v)", float64(growth)/(1<<20), events, gaps, gapErrs)
				if growth > memoryBound {
					t.Errorf("process grew by %.1f MiB, bound %d MiB", float64(growth)/(1<<20), memoryBound>>20)
				}
			})
		}
	}
}

// offHeap writes parts to a file and returns its path: the test's own input must not sit in the
// heap while it is measured (64 MiB of live test data would also let the garbage collector wait
// for 64 MiB of garbage before its next cycle).
func offHeap(t testing.TB, parts ...[]byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "input")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range parts {
		if _, err := f.Write(b); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return p
}

// copyFile writes the file at path to w through a small buffer.
func copyFile(w io.Writer, path string) {
	f, err := os.Open(path)
	if err != nil {
		return
	}
	defer f.Close()
	_, _ = io.CopyBuffer(w, struct{ io.Reader }{f}, make([]byte, 32<<10))
}

// serveZMTPReply answers every request on a unix socket with body as the reply, speaking just
// enough ZMTP 3.1 (NULL, ROUTER) for the client. It returns the ipc:// address.
func serveZMTPReply(t testing.TB, body []byte) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "rq")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	p := filepath.Join(dir, "req.ipc")
	ln, err := net.Listen("unix", p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	greeting := make([]byte, 64)
	greeting[0], greeting[9], greeting[10], greeting[11] = 0xff, 0x7f, 3, 1
	copy(greeting[12:], "NULL")
	ready := []byte{0x04, 0, 5, 'R', 'E', 'A', 'D', 'Y', 11}
	ready = append(ready, "Socket-Type"...)
	ready = append(binary.BigEndian.AppendUint32(ready, 6), "ROUTER"...)
	ready[1] = byte(len(ready) - 2)
	reply := []byte{0x01, 0x00, 0x02} // empty delimiter (MORE), then a long frame
	replyFile := offHeap(t, binary.BigEndian.AppendUint64(reply, uint64(len(body))), body)
	go func() {
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer nc.Close()
				_, _ = nc.Write(greeting)
				_, _ = nc.Write(ready)
				var g [64]byte
				if _, err := io.ReadFull(nc, g[:]); err != nil {
					return
				}
				// READY, then the request [delimiter, body]: read frames until one without MORE
				// after the READY command
				for n := 0; ; n++ {
					var h [2]byte
					if _, err := io.ReadFull(nc, h[:]); err != nil {
						return
					}
					size := uint64(h[1])
					if h[0]&0x02 != 0 {
						var rest [7]byte
						if _, err := io.ReadFull(nc, rest[:]); err != nil {
							return
						}
						size = binary.BigEndian.Uint64(append([]byte{h[1]}, rest[:]...))
					}
					if _, err := io.CopyN(io.Discard, nc, int64(size)); err != nil {
						return
					}
					if n > 0 && h[0]&0x01 == 0 {
						break
					}
				}
				copyFile(nc, replyFile)
				_, _ = io.Copy(io.Discard, nc)
			}()
		}
	}()
	return "ipc://" + p
}

// TestReplyMemoryBound: a reply at the cap of each hostile shape grows the process by at most
// 64 MiB with the default options, and fails as malformed (outcome unknown), never as a crash.
func TestReplyMemoryBound(t *testing.T) {
	// Not parallel: it measures the heap of the whole process.
	if raceEnabled {
		t.Skip("memory measurement skipped under -race: the race detector distorts allocations")
	}
	if testing.Short() {
		t.Skip("short")
	}
	for _, sh := range hostileShapes() {
		t.Run(sh.name, func(t *testing.T) {
			addr := serveZMTPReply(t, sh.make(salt.DefaultMaxReplyBytes-64))
			c, err := salt.NewClient(addr, salt.WithAuth(salt.Eauth("file", "u", "p")), salt.WithRequestTimeout(30*time.Second))
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			var perr error
			growth := measurePeakGrowth(func() {
				_, perr = c.Publish(context.Background(), salt.PublishRequest{Target: salt.ListTarget("m"), Fun: "test.ping"})
			})
			t.Logf("peak heap growth %.1f MiB: %v", float64(growth)/(1<<20), perr)
			if !salt.IsOutcomeUnknown(perr) {
				t.Errorf("reply accepted or refused as not published: %v", perr)
			}
			if growth > memoryBound {
				t.Errorf("process grew by %.1f MiB, bound %d MiB", float64(growth)/(1<<20), memoryBound>>20)
			}
		})
	}
}
