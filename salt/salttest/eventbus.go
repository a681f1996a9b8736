package salttest

import (
	"context"
	"encoding/binary"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/errors"

	"github.com/oduflow/oduflow-go/internal/saltwire"
)

// eventBus is the read side of the master event bus (master_event_pub.ipc, optionally TCP):
// a stream server that writes every fired event to every connected reader. No subscription,
// no replay; each reader has a bounded queue and is disconnected when it falls behind.
type eventBus struct {
	s       *Master
	framing Framing
	bufLen  int
	unixLn  net.Listener
	tcpLn   net.Listener
	tcpAddr string

	acceptMu sync.Mutex // serialises Accept between the accept loops and publish (see settle.go)
	// acceptChecks counts the checks of the accept queues begun (under acceptMu): acceptNow skips
	// its own when one began after it arrived.
	acceptChecks atomic.Uint64
	stop         chan struct{}

	mu      sync.Mutex
	readers map[*evReader]struct{}
	closed  bool
	stalled bool // StallEventBus: frames are dropped, readers stay connected
	wg      sync.WaitGroup

	// blocking (Generation3007+): one publisher goroutine writes each frame
	// to every reader in turn and waits for each write, like the TCP
	// transport's PubServer.publish_payload: a reader that stops reading
	// blocks the bus for every reader. pending is its queue (unbounded,
	// like the master's pull side); wake signals it.
	blocking bool
	pending  [][]byte
	wake     chan struct{}

	// queued (not blocking): frames fired with publishQueued, not yet given to the readers;
	// dispatchLoop gives them in batches (one accept-queue check and one pass over the readers
	// per batch), woken by dispatch. Every publish gives them first: no frame overtakes another.
	queued   [][]byte
	dispatch chan struct{}
}

// maxUnixPath is the longest unix socket path Linux accepts (sun_path is 108 bytes with NUL).
const maxUnixPath = 107

type evReader struct {
	c    net.Conn
	ch   chan []byte
	done chan struct{}
	once sync.Once
}

func (r *evReader) kill() {
	r.once.Do(func() {
		close(r.done)
		_ = r.c.Close()
	})
}

func startEventBus(ctx context.Context, s *Master, prev *eventBus) (*eventBus, error) {
	b := &eventBus{s: s, framing: s.cfg.framing, bufLen: s.cfg.eventBuffer, readers: map[*evReader]struct{}{},
		stop: make(chan struct{}), blocking: s.cfg.generation.blockingBus(), wake: make(chan struct{}, 1),
		dispatch: make(chan struct{}, 1)}
	if b.bufLen <= 0 {
		b.bufLen = 1
	}
	path := s.eventSocketPath()
	if len(path) > maxUnixPath {
		return nil, errors.Newf("salttest: event socket path is %d bytes, the limit is %d: use a shorter WithDir",
			errors.Safe(len(path)), errors.Safe(maxUnixPath))
	}
	if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
		return nil, errors.Wrap(err, "salttest: remove stale event socket")
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "unix", path)
	if err != nil {
		return nil, errors.Wrap(err, "salttest: listen event socket")
	}
	mode := os.FileMode(0o600)
	switch {
	case s.cfg.generation >= Generation3007:
		mode = 0o660 // 3007.2+ and the 3008 line: the transport's publisher, always group-readable
	case len(s.cfg.users) > 0:
		mode = 0o660 // 3006's IPC publisher: group-readable when external_auth is configured
	}
	if err := os.Chmod(path, mode); err != nil {
		_ = ln.Close()
		return nil, errors.Wrap(err, "salttest: chmod event socket")
	}
	b.unixLn = ln
	if s.cfg.eventTCP {
		addr := "127.0.0.1:0"
		if prev != nil && prev.tcpAddr != "" {
			addr = prev.tcpAddr
		}
		tl, err := lc.Listen(ctx, "tcp", addr)
		if err != nil {
			_ = ln.Close()
			return nil, errors.Wrap(err, "salttest: listen event tcp")
		}
		b.tcpLn, b.tcpAddr = tl, tl.Addr().String()
	}
	for _, l := range []net.Listener{b.unixLn, b.tcpLn} {
		if l != nil {
			b.wg.Add(1)
			go b.acceptLoop(l)
		}
	}
	b.wg.Add(1)
	if b.blocking {
		go b.publishLoop()
	} else {
		go b.dispatchLoop()
	}
	return b, nil
}

// register starts serving a newly accepted reader; false when the bus is closed.
func (b *eventBus) register(c net.Conn) bool {
	r := &evReader{c: c, ch: make(chan []byte, b.bufLen), done: make(chan struct{})}
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		_ = c.Close()
		return false
	}
	b.readers[r] = struct{}{}
	if b.blocking {
		b.wg.Add(1) // drain only: publishLoop writes to it
	} else {
		b.wg.Add(2)
		go b.writeLoop(r)
	}
	b.mu.Unlock()
	b.s.state.notify()
	go b.drain(r)
	return true
}

// drain discards anything the reader sends and notices when it hangs up.
func (b *eventBus) drain(r *evReader) {
	defer b.wg.Done()
	_, _ = io.Copy(io.Discard, r.c)
	b.remove(r)
}

// writeLoop writes the reader's queued frames in order. Frames queued back to back go out in
// one vectored write (up to writeBatchFrames frames or writeBatchBytes): the stream carries the
// same bytes, in fewer system calls, as the master's publisher flushing its buffer.
func (b *eventBus) writeLoop(r *evReader) {
	defer b.wg.Done()
	defer b.remove(r)
	batch := make(net.Buffers, 0, writeBatchFrames)
	for {
		select {
		case <-r.done:
			return
		case f := <-r.ch:
			batch = append(batch[:0], f)
			size := len(f)
		more:
			for len(batch) < writeBatchFrames && size < writeBatchBytes {
				select {
				case g := <-r.ch:
					batch = append(batch, g)
					size += len(g)
				default:
					break more
				}
			}
			_ = r.c.SetWriteDeadline(time.Now().Add(writeTimeout))
			out := batch // WriteTo consumes its receiver
			if _, err := out.WriteTo(r.c); err != nil {
				return
			}
			clear(batch) // the frames are garbage once written
		}
	}
}

// A reader's write batch: at most this many frames, and no more frames once this many bytes
// are in it.
const (
	writeBatchFrames = 256
	writeBatchBytes  = 256 << 10
)

func (b *eventBus) remove(r *evReader) {
	r.kill()
	b.mu.Lock()
	delete(b.readers, r)
	b.mu.Unlock()
	b.s.state.notify()
}

// frame builds one wire frame for tag and data (data gets _stamp if it has none): the map
// {"head": {}, "body": bin(tag "\n\n" data)}, with its length prefix under
// FramingLengthPrefixed (TestFrameMatchesPackedMap holds it equal to packEvent of that map).
func (b *eventBus) frame(tag string, data *omap) ([]byte, error) {
	if !data.Has("_stamp") {
		data.Set("_stamp", stamp(time.Now()))
	}
	buf, err := saltwire.Append(frameStart(tag, frameDataGuess), saltwire.Event, data)
	if err != nil {
		return nil, err
	}
	return b.frameFinish(buf), nil
}

// frameEncoded is frame for data already encoded (a msgpack map holding its _stamp).
func (b *eventBus) frameEncoded(tag string, data []byte) []byte {
	return b.frameFinish(append(frameStart(tag, len(data)), data...))
}

// frameRoom is the room left before a frame's body for its header: length prefix, map, "head",
// {}, "body", bin header.
const frameRoom = 4 + 1 + 5 + 1 + 5 + 5

// frameStart starts a frame's buffer: room for its header, then the body's tag and separator;
// the data (about dataLen bytes) is appended next, then frameFinish writes the header. A frame
// is one allocation and its body is never copied.
func frameStart(tag string, dataLen int) []byte {
	buf := make([]byte, frameRoom, frameRoom+len(tag)+len(tagSeparator)+dataLen)
	return append(append(buf, tag...), tagSeparator...)
}

// frameFinish writes the header right before the body frameStart began and returns the frame.
func (b *eventBus) frameFinish(buf []byte) []byte {
	var hdr [frameRoom]byte
	h := hdr[:0]
	if b.framing == FramingLengthPrefixed {
		h = append(h, 0, 0, 0, 0) // the frame's length, once known
	}
	h = append(h, 0x82, 0xa4, 'h', 'e', 'a', 'd', 0x80, 0xa4, 'b', 'o', 'd', 'y')
	h = saltwire.AppendBinHeader(h, len(buf)-frameRoom)
	start := frameRoom - len(h)
	copy(buf[start:], h)
	f := buf[start:]
	if b.framing == FramingLengthPrefixed {
		binary.BigEndian.PutUint32(f, uint32(len(f)-4))
	}
	return f
}

// tagSeparator ends an event's tag in its body.
const tagSeparator = "\n\n"

// frameDataGuess is the room first given to an event's data: a test.ping return is about 200
// bytes; larger data grows the buffer.
const frameDataGuess = 320

// publish queues the frame to every reader, after the frames of publishQueued still waiting;
// a reader with a full queue is disconnected.
func (b *eventBus) publish(f []byte) {
	b.acceptNow()
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.stalled {
		return
	}
	if b.blocking {
		b.pending = append(b.pending, f)
		select {
		case b.wake <- struct{}{}:
		default:
		}
		return
	}
	b.giveQueuedLocked()
	b.giveLocked(f)
}

// publishQueued is publish for a minion's return: the frame is queued and dispatchLoop gives it
// to the readers with the others queued meanwhile, so that a storm of 10,000 returns costs a
// check of the accept queue and a pass over the readers per batch, not per return. A reader
// whose connect() returned before the call receives the frame all the same: the check runs
// after the frame is queued. On the blocking bus (Generation3007+) it is publish.
func (b *eventBus) publishQueued(f []byte) {
	if b.blocking {
		b.publish(f)
		return
	}
	b.mu.Lock()
	if b.stalled {
		b.mu.Unlock()
		return
	}
	b.queued = append(b.queued, f)
	b.mu.Unlock()
	select {
	case b.dispatch <- struct{}{}:
	default:
	}
}

// dispatchLoop gives the frames of publishQueued to the readers, a batch at a time.
func (b *eventBus) dispatchLoop() {
	defer b.wg.Done()
	for {
		select {
		case <-b.dispatch:
		case <-b.stop:
			return
		}
		b.acceptNow() // after the batch was queued: a reader connected before is registered
		b.mu.Lock()
		b.giveQueuedLocked()
		b.mu.Unlock()
	}
}

// giveQueuedLocked gives the frames of publishQueued still waiting to the readers, in order.
// The caller holds mu and checked the accept queue after they were queued.
func (b *eventBus) giveQueuedLocked() {
	if len(b.queued) == 0 {
		return
	}
	for _, f := range b.queued {
		b.giveLocked(f)
	}
	clear(b.queued)
	b.queued = b.queued[:0]
}

// giveLocked queues f to every reader; a reader with a full queue is disconnected. The caller
// holds mu.
func (b *eventBus) giveLocked(f []byte) {
	for r := range b.readers {
		select {
		case r.ch <- f:
		default:
			b.s.log.Warn("event bus reader too slow, disconnecting")
			r.kill()
			delete(b.readers, r)
			b.s.state.notify() // a leaf lock: safe under b.mu
		}
	}
}

// publishLoop is the blocking publisher (Generation3007+): every frame goes to
// every reader in turn, each write waited for without a deadline. A reader
// whose connection fails is removed; one that merely stops reading holds
// every other reader (and every later frame) until it reads or goes away.
func (b *eventBus) publishLoop() {
	defer b.wg.Done()
	for {
		b.mu.Lock()
		frames := b.pending
		b.pending = nil
		readers := make([]*evReader, 0, len(b.readers))
		for r := range b.readers {
			readers = append(readers, r)
		}
		b.mu.Unlock()
		if len(frames) == 0 {
			select {
			case <-b.wake:
				continue
			case <-b.stop:
				return
			}
		}
		for _, f := range frames {
			for _, r := range readers {
				select {
				case <-r.done:
					continue
				default:
				}
				if _, err := r.c.Write(f); err != nil {
					b.remove(r)
				}
			}
		}
	}
}

func (b *eventBus) dropReaders() {
	b.mu.Lock()
	defer b.mu.Unlock()
	// returns still queued were fired for the readers dropped here: a reader connecting later
	// must not receive them
	clear(b.queued)
	b.queued = b.queued[:0]
	for r := range b.readers {
		r.kill()
		delete(b.readers, r)
	}
	b.s.state.notify() // a leaf lock: safe under b.mu
}

func (b *eventBus) readerCount() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.readers)
}

func (b *eventBus) close() {
	b.mu.Lock()
	if !b.closed {
		close(b.stop)
	}
	b.closed = true
	b.mu.Unlock()
	_ = b.unixLn.Close()
	if b.tcpLn != nil {
		_ = b.tcpLn.Close()
	}
	b.dropReaders()
	b.wg.Wait()
}

// fire sends an event to the current bus (no-op without readers). Data is an ordered map
// or a map[string]any.
func (s *Master) fire(tag string, data *omap) {
	s.lifeMu.Lock()
	b := s.bus
	s.lifeMu.Unlock()
	if b == nil {
		return
	}
	f, err := b.frame(tag, data)
	if err != nil {
		s.log.Error("cannot encode event", "tag", tag, "err", err)
		return
	}
	b.publish(f)
}

// fireEncoded sends a return whose data is already encoded (with its _stamp) to the current
// bus (publishQueued).
func (s *Master) fireEncoded(tag string, data []byte) {
	s.lifeMu.Lock()
	b := s.bus
	s.lifeMu.Unlock()
	if b == nil {
		return
	}
	b.publishQueued(b.frameEncoded(tag, data))
}

// FireEvent puts an arbitrary event on the bus (tag, data plus _stamp), as anyone who can
// write to master_event_pull.ipc can.
func (s *Master) FireEvent(tag string, data map[string]any) error {
	if s.isClosed() {
		return ErrClosed
	}
	m := &omap{}
	for _, k := range sortedKeys(data) {
		m.Set(k, data[k])
	}
	s.lifeMu.Lock()
	b := s.bus
	s.lifeMu.Unlock()
	f, err := b.frame(tag, m)
	if err != nil {
		return err
	}
	b.publish(f)
	return nil
}

// FireClusterEvent puts on the bus an event of the cluster peer master peer (Salt 3007+ cluster
// mode), tagged "cluster/event/<peer>/<tag>" with data plus "__peer_id": <peer>, the id a
// cluster master adds to a peer's event. The real master forwards such events to its peers
// encrypted with the cluster key and republishes them locally under the inner tag; the
// simulator has no cluster key, so it sends the data in clear under the wrapped tag, for
// testing a subscriber that unwraps it. Refused (ErrClosed) after Close; any generation.
func (s *Master) FireClusterEvent(peer, tag string, data map[string]any) error {
	m := make(map[string]any, len(data)+1)
	for k, v := range data {
		m[k] = v
	}
	m["__peer_id"] = peer
	return s.FireEvent("cluster/event/"+peer+"/"+tag, m)
}
