// Command benchreader is the Go event-bus reader that scripts/bench.sh adds to the anchors' event
// rounds (the reader "extra" beside Salt's own MasterEvent reader), so that the salt package's event
// stream is measured on the same replayed load, in the same run, as Salt's Python reader.
//
// Protocol of a round: connect to $ANCHORS_EVENTS, print "ready", wait for one line on stdin, read
// until the event tagged $ANCHORS_END_TAG counting events whose tag starts with $ANCHORS_PREFIX, then
// print {"count": N, "elapsed_s": S, "gaps": G, "cpu_s": C}. With $BENCHREADER_LOG set, that line is
// also appended to that file (the round's driver keeps only the rate; bench.sh wants the CPU time too).
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/oduflow/oduflow-go/bench/internal/benchkit"
	"github.com/oduflow/oduflow-go/salt"
)

func main() {
	if err := run(os.Getenv, os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "benchreader:", err)
		os.Exit(1)
	}
}

// run is one round: the round's settings from getenv, "go" read from stdin, "ready" and the result
// written to stdout.
func run(getenv func(string) string, stdin io.Reader, stdout io.Writer) error {
	addr, endTag, prefix := getenv("ANCHORS_EVENTS"), getenv("ANCHORS_END_TAG"), getenv("ANCHORS_PREFIX")
	if addr == "" || endTag == "" {
		return fmt.Errorf("ANCHORS_EVENTS and ANCHORS_END_TAG must be set")
	}
	if !strings.Contains(addr, "://") {
		addr = "unix://" + addr
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	// Like the Python readers, connect before the load is fired but read nothing until "go":
	// the master queues the whole round for this connection, and the reader drains it.
	gate := make(chan struct{})
	var reads, readBytes atomic.Int64
	dial := func(ctx context.Context, network, address string) (net.Conn, error) {
		var d net.Dialer
		c, err := d.DialContext(ctx, network, address)
		if err != nil {
			return nil, err
		}
		return &gatedConn{Conn: c, gate: gate, reads: &reads, bytes: &readBytes}, nil
	}
	// A buffer large enough for a whole replayed round: the reader is measured, not the consumer.
	stream, err := salt.SubscribeEvents(ctx, addr, salt.WithEventDialer(dial),
		salt.WithEventBuffer(1<<17, 1<<30))
	if err != nil {
		return err
	}
	defer stream.Close()
	fmt.Fprintln(stdout, "ready")
	if _, err := bufio.NewReader(stdin).ReadString('\n'); err != nil {
		return fmt.Errorf("waiting for go: %w", err)
	}
	start, cpu0 := time.Now(), benchkit.CPUTime()
	close(gate)
	count, gaps := 0, 0
	for ev := range stream.Events() {
		switch {
		case ev.Gap != nil:
			gaps++
		case ev.Tag == endTag:
			// reads: the socket reads the stream made (each at most its 64 KiB buffer): few bytes per
			// read mean the reader kept up with what the master wrote
			res := map[string]any{"count": count, "elapsed_s": time.Since(start).Seconds(), "gaps": gaps,
				"cpu_s": (benchkit.CPUTime() - cpu0).Seconds(), "reads": reads.Load(), "read_bytes": readBytes.Load()}
			out, _ := json.Marshal(res)
			fmt.Fprintln(stdout, string(out))
			return appendLog(getenv("BENCHREADER_LOG"), out)
		case strings.HasPrefix(ev.Tag, prefix) && len(ev.Data) > 0:
			count++
		}
	}
	return fmt.Errorf("event stream ended after %d events", count)
}

// appendLog appends one JSON line to path (BENCHREADER_LOG: bench.sh keeps the reader's CPU time,
// which the anchors' round protocol drops). No path: nothing to do.
func appendLog(path string, line []byte) error {
	if path == "" {
		return nil
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(append(line, '\n')); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

// gatedConn blocks reads until gate is closed, and counts them.
type gatedConn struct {
	net.Conn
	gate         chan struct{}
	reads, bytes *atomic.Int64
}

func (c *gatedConn) Read(p []byte) (int, error) {
	<-c.gate
	n, err := c.Conn.Read(p)
	c.reads.Add(1)
	c.bytes.Add(int64(n))
	return n, err
}
