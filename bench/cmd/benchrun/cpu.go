package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"runtime"
	"time"

	"github.com/oduflow/oduflow-go/bench/internal/benchkit"
	"github.com/oduflow/oduflow-go/internal/benchsource"
	"github.com/oduflow/oduflow-go/profiles"
	"github.com/oduflow/oduflow-go/salt"
)

// cpuLoop runs f n times after warmup runs and reports wall and CPU time per call (ms) and calls/s.
func cpuLoop(n, warmup int, f func() error) (map[string]any, error) {
	for range warmup {
		if err := f(); err != nil {
			return nil, err
		}
	}
	runtime.GC()
	c0, t0 := benchkit.CPUTime(), time.Now()
	for range n {
		if err := f(); err != nil {
			return nil, err
		}
	}
	wall, cpu := time.Since(t0), benchkit.CPUTime()-c0
	return map[string]any{"n": n, "wall_ms_per_op": benchkit.Round3(float64(wall) / float64(n) / 1e6),
		"cpu_ms_per_op": benchkit.Round3(float64(cpu) / float64(n) / 1e6), "wall_per_s": benchkit.Round3(float64(n) / wall.Seconds()),
		"cpu_per_s": benchkit.Round3(float64(n) / cpu.Seconds())}, nil
}

// cmdCustom: profiles.CompileCustom (validation, compilation, canonical JSON, SHA-256) of a 64 KiB,
// 100-id source.
func cmdCustom(_ context.Context, args []string) (any, error) {
	fs := flag.NewFlagSet("custom", flag.ContinueOnError)
	n := fs.Int("n", 200, "compilations")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	src, err := source64KiB()
	if err != nil {
		return nil, err
	}
	return cpuLoop(*n, 5, func() error {
		c, err := profiles.CompileCustom(src)
		if err != nil {
			return err
		}
		if len(c.Digest) != 64 || len(c.HighData) != 100 {
			return fmt.Errorf("unexpected compilation: %d ids", len(c.HighData))
		}
		return nil
	})
}

// cmdDecode: the event stream's decode (frame map, tag split and filter, data under the decoded-size
// budget, typed JobReturn) of one captured return event frame, fed from memory through an in-process pipe
// (salt.WithEventDialer): the same frame the anchor's Salt unpack-only figure decodes. The figure includes
// the stream's queueing, so it is a lower bound of the decoder alone.
func cmdDecode(ctx context.Context, args []string) (any, error) {
	fs := flag.NewFlagSet("decode", flag.ContinueOnError)
	n := fs.Int("n", 200000, "decodes")
	frameFile := fs.String("frame", "salt/testdata/vectors/eventbus/event_ret_test_ping.frame.bin", "captured frame")
	prof := fs.String("cpuprofile", "", "write a CPU profile of the measured loop here")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	stopProfile, err := benchkit.StartCPUProfile(*prof)
	if err != nil {
		return nil, err
	}
	defer stopProfile()
	frame, err := os.ReadFile(*frameFile)
	if err != nil {
		return nil, err
	}
	const warmup, window = 1000, 128
	total := *n + warmup
	// At most window frames in flight, so the stream's bounded queue never overflows (an overflow is a
	// gap, and dropped frames would be decoded but not counted). The writer sends every frame it has a
	// token for in one write, as a socket with a backlog hands the reader many frames per read (one
	// write per frame would measure the pipe's rendezvous, not the reader).
	tokens := make(chan struct{}, window)
	for range window {
		tokens <- struct{}{}
	}
	batch := bytes.Repeat(frame, window)
	dial := func(ctx context.Context, _, _ string) (net.Conn, error) {
		client, server := net.Pipe()
		go func() {
			defer server.Close()
			for sent := 0; sent < total; {
				k := 0
				select {
				case <-tokens:
					k = 1
				case <-ctx.Done():
					return
				}
				for k < total-sent && k < window {
					select {
					case <-tokens:
						k++
						continue
					default:
					}
					break
				}
				if _, err := server.Write(batch[:k*len(frame)]); err != nil {
					return
				}
				sent += k
			}
			<-ctx.Done()
		}()
		return client, nil
	}
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := salt.SubscribeEvents(sctx, "unix:///benchrun-pipe", salt.WithEventDialer(dial),
		salt.WithLogger(benchkit.Discard()))
	if err != nil {
		return nil, err
	}
	defer stream.Close()
	next := func() error {
		ev, ok := <-stream.Events()
		if !ok {
			return fmt.Errorf("event stream closed")
		}
		tokens <- struct{}{}
		if ev.JobReturn == nil {
			if ev.Gap != nil {
				return fmt.Errorf("event stream gap: %s: %v", ev.Gap.Reason, ev.Gap.Err)
			}
			return fmt.Errorf("frame is not a job return (tag %q)", ev.Tag)
		}
		return nil
	}
	return cpuLoop(*n, warmup, next)
}

// source64KiB is the profiles package's benchmark source: exactly MaxSourceBytes with 100 state ids.
func source64KiB() ([]byte, error) { return benchsource.SLS(profiles.MaxSourceBytes, 100) }
