package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/oduflow/oduflow-go/bench/internal/benchkit"
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

// source64KiB builds a realistic source of exactly MaxSourceBytes with MaxStateIDs ids (the same shape
// as the profiles package's own benchmark source): file, package, service and command declarations
// with requisites, names, nested values and block scalars, padded by a comment.
func source64KiB() ([]byte, error) {
	var b strings.Builder
	b.WriteString("# benchmark source: 100 state ids, 64 KiB\n")
	for i := range 100 {
		switch i % 4 {
		case 0:
			fmt.Fprintf(&b, "app_%03d_pkg:\n  pkg.installed:\n    - names:\n      - tool-%03d-a\n      - tool-%03d-b\n    - refresh: false\n", i, i, i)
		case 1:
			fmt.Fprintf(&b, "/etc/app/%03d.conf:\n  file.managed:\n    - user: root\n    - group: app\n    - mode: \"0640\"\n"+
				"    - makedirs: true\n    - contents: |\n        # generated %03d\n        listen = 127.0.0.1:%d\n        workers = %d\n"+
				"        timeout = %d.5\n    - require:\n      - pkg: app_%03d_pkg\n", i, i, 8000+i, i%16+1, i, i-1)
		case 2:
			fmt.Fprintf(&b, "app_%03d_service:\n  service.running:\n    - name: app-%03d\n    - enable: true\n    - reload: true\n"+
				"    - watch:\n      - file: /etc/app/%03d.conf\n  cmd.run:\n    - name: /usr/local/bin/check %03d --strict\n"+
				"    - onchanges:\n      - file: /etc/app/%03d.conf\n", i, i, i-1, i, i-1)
		case 3:
			fmt.Fprintf(&b, "/etc/app/%03d.json:\n  file.serialize:\n    - serializer: json\n    - dataset:\n        id: %d\n"+
				"        tags: [alpha, beta, \"gamma %03d\"]\n        limits: {cpu: 1.5, memory: 512, burst: null}\n"+
				"        peers:\n          - {host: peer-a, port: 7000}\n          - {host: peer-b, port: 7001}\n", i, i, i)
		}
	}
	for b.Len() < profiles.MaxSourceBytes-80 {
		b.WriteString("# padding padding padding padding padding padding padding padding padding\n")
	}
	b.WriteString("# " + strings.Repeat("-", profiles.MaxSourceBytes-b.Len()-3) + "\n")
	if b.Len() != profiles.MaxSourceBytes {
		return nil, fmt.Errorf("source is %d bytes", b.Len())
	}
	return []byte(b.String()), nil
}
