package salt

import (
	"context"
	"encoding/binary"
	"net"
	"path/filepath"
	"testing"
	"time"
)

// BenchmarkEventStreamThroughput drains a backlog of captured return frames
// through the whole SubscribeEvents path (socket read, framing, decode,
// classify, bounded queue, channel hand-off) over a unix socket pair, bare
// and length-prefixed framing.
func BenchmarkEventStreamThroughput(b *testing.B) {
	for _, tc := range []struct {
		name   string
		glob   string
		prefix bool
	}{
		{"ping/bare", "event_ret_test_ping.frame.bin", false},
		{"ping/prefixed", "event_ret_test_ping.frame.bin", true},
		{"state/bare", "event_ret_state_apply_*.frame.bin", false},
		{"state/prefixed", "event_ret_state_apply_*.frame.bin", true},
	} {
		b.Run(tc.name, func(b *testing.B) {
			files, _ := filepath.Glob(filepath.Join(vectorDir, "eventbus", tc.glob))
			if len(files) == 0 {
				b.Fatal("no frames")
			}
			// one chunk of frames written repeatedly
			var chunk []byte
			per := 0
			for len(chunk) < 256<<10 {
				for _, f := range files {
					fr := readVector(b, "eventbus/"+filepath.Base(f))
					if tc.prefix {
						chunk = binary.BigEndian.AppendUint32(chunk, uint32(len(fr)))
					}
					chunk = append(chunk, fr...)
					per++
				}
			}
			benchStream(b, chunk, per)
		})
	}
}

func benchStream(b *testing.B, chunk []byte, perChunk int) {
	dir := b.TempDir()
	sock := filepath.Join(dir, "ev.ipc")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	chunks := (b.N + perChunk - 1) / perChunk
	want := chunks * perChunk
	drained := make(chan struct{}) // the reader has every event: the writer may hang up
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		for i := 0; i < chunks; i++ {
			if _, err := c.Write(chunk); err != nil {
				return
			}
		}
		select { // EOF only once the reader drained (or gave up)
		case <-drained:
		case <-time.After(30 * time.Second):
		}
	}()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	b.SetBytes(int64(len(chunk) / perChunk))
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	s, err := SubscribeEvents(ctx, "unix://"+sock, WithEventBuffer(1<<17, 1<<30), WithReconnectBackoff(time.Hour, time.Hour))
	if err != nil {
		b.Fatal(err)
	}
	n, dropped := 0, 0
	for ev := range s.Events() {
		switch {
		case ev.Kind() == EventGap && ev.Gap.Reason == gapReasonOverflow:
			// the consumer loop is measured too; count what it lost
			dropped += ev.Gap.Dropped
			n += ev.Gap.Dropped
		case ev.Kind() != EventJobReturn || len(ev.Data) == 0:
			b.Fatalf("unexpected event %v %+v", ev.Kind(), ev.Gap)
		default:
			n++
		}
		if n == want {
			break
		}
	}
	el := time.Since(start)
	close(drained)
	b.StopTimer()
	b.ReportMetric(float64(n-dropped)/el.Seconds(), "events/s")
	b.ReportMetric(float64(dropped)/float64(n), "dropped/event")
	_ = s.Close()
}
