package main

import (
	"bytes"
	"context"
	"net"
	"strings"
	"sync"
	"time"
)

// rawBusReader is a second, bare connection to the master's event bus for e2e_ping -raw: it reads
// bytes as they come, without framing or decoding, and stamps when the tag of a watched job's new
// and return events first appears in them. The difference to the stream's consumer is the
// client's own reading, decoding and hand-off; the difference to the master's _stamp is the
// master's bus (its event publisher) plus the kernel's socket.
type rawBusReader struct {
	conn net.Conn
	mu   sync.Mutex
	jid  string
	new  time.Time
	ret  time.Time
	done chan struct{}
}

func newRawBusReader(ctx context.Context, addr string) (*rawBusReader, error) {
	network, address := "unix", strings.TrimPrefix(addr, "unix://")
	if strings.HasPrefix(addr, "tcp://") {
		network, address = "tcp", strings.TrimPrefix(addr, "tcp://")
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, network, address)
	if err != nil {
		return nil, err
	}
	r := &rawBusReader{conn: conn, done: make(chan struct{})}
	go r.read()
	return r, nil
}

func (r *rawBusReader) read() {
	defer close(r.done)
	buf := make([]byte, 256<<10)
	var tail []byte // the end of the previous read: a tag split across two reads is still found
	for {
		n, err := r.conn.Read(buf)
		now := time.Now()
		if n > 0 {
			hay := append(tail, buf[:n]...)
			r.mu.Lock()
			if r.jid != "" {
				if r.new.IsZero() && bytes.Contains(hay, []byte("salt/job/"+r.jid+"/new")) {
					r.new = now
				}
				if r.ret.IsZero() && bytes.Contains(hay, []byte("salt/job/"+r.jid+"/ret/")) {
					r.ret = now
				}
			}
			r.mu.Unlock()
			keep := min(len(hay), 64)
			tail = append(tail[:0], hay[len(hay)-keep:]...)
		}
		if err != nil {
			return
		}
	}
}

// watch starts looking for jid's events (one job at a time).
func (r *rawBusReader) watch(jid string) {
	r.mu.Lock()
	r.jid, r.new, r.ret = jid, time.Time{}, time.Time{}
	r.mu.Unlock()
}

// result is when the watched job's new and return tags were first read, zero when not read within
// wait (the consumer of the other connection may see the return before this reader ran).
func (r *rawBusReader) result(jid string, wait time.Duration) (newAt, retAt time.Time) {
	deadline := time.Now().Add(wait)
	for {
		r.mu.Lock()
		if r.jid != jid {
			r.mu.Unlock()
			return time.Time{}, time.Time{}
		}
		newAt, retAt = r.new, r.ret
		r.mu.Unlock()
		if (!newAt.IsZero() && !retAt.IsZero()) || time.Now().After(deadline) {
			return newAt, retAt
		}
		time.Sleep(time.Millisecond)
	}
}

func (r *rawBusReader) close() {
	_ = r.conn.Close()
	<-r.done
}
