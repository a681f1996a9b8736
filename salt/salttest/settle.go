package salttest

import (
	"net"
	"syscall"
	"time"

	"github.com/cockroachdb/errors"
	"golang.org/x/sys/unix"
)

// The event bus has no handshake: a client considers itself subscribed as soon as connect()
// returns, which happens when the kernel has queued the connection, before any Accept. To keep
// "subscribe, then publish" reliable, connections are only accepted under acceptMu, by the
// accept loops (polling) and by every publish before it writes: an event never overtakes a
// connection that was already queued.

// readable reports whether fd has a connection in its accept queue, without blocking.
func readable(fd uintptr) bool {
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	n, err := unix.Poll(fds, 0)
	return err == nil && n > 0 && fds[0].Revents&unix.POLLIN != 0
}

type deadliner interface{ SetDeadline(time.Time) error }

// acceptQueued accepts every queued connection of ln and registers it. The caller holds acceptMu.
func (b *eventBus) acceptQueued(ln net.Listener) error {
	sc, ok := ln.(syscall.Conn)
	if !ok {
		return errors.New("salttest: listener without a file descriptor")
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return err
	}
	for {
		ready := false
		if err := raw.Control(func(fd uintptr) { ready = readable(fd) }); err != nil {
			return err
		}
		if !ready {
			return nil
		}
		d, hasDeadline := ln.(deadliner)
		if hasDeadline {
			_ = d.SetDeadline(time.Now().Add(50 * time.Millisecond))
		}
		c, err := ln.Accept()
		if hasDeadline {
			_ = d.SetDeadline(time.Time{}) // the accept loop's wait shares this deadline
		}
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				return nil // the queued connection went away
			}
			return err
		}
		if !b.register(c) {
			return net.ErrClosed
		}
	}
}

// acceptLoop polls ln every acceptPoll and accepts what is queued, under acceptMu. (A
// listener's RawConn cannot wait for readability, and a blocking Accept outside the lock
// would reopen the race.)
func (b *eventBus) acceptLoop(ln net.Listener) {
	defer b.wg.Done()
	t := time.NewTicker(acceptPoll)
	defer t.Stop()
	for {
		select {
		case <-b.stop:
			return
		case <-t.C:
		}
		b.acceptMu.Lock()
		err := b.acceptQueued(ln)
		b.acceptMu.Unlock()
		if err != nil {
			return
		}
	}
}

const acceptPoll = 2 * time.Millisecond

// acceptNow registers every connection already queued on the bus listeners. Concurrent
// publishers share a check: one that finds, once it holds acceptMu, that a check began after it
// arrived is covered by that check (a connection queued before it arrived was queued before that
// check began) and skips its own; a storm of returns costs one poll per burst, not per event.
func (b *eventBus) acceptNow() {
	arrived := b.acceptChecks.Load()
	b.acceptMu.Lock()
	defer b.acceptMu.Unlock()
	if b.acceptChecks.Load() != arrived {
		return
	}
	b.acceptQueuedAll()
}

// acceptQueuedAll accepts what is queued on every listener. The caller holds acceptMu.
func (b *eventBus) acceptQueuedAll() {
	b.acceptChecks.Add(1) // before looking: a publisher that arrived earlier is covered
	for _, ln := range []net.Listener{b.unixLn, b.tcpLn} {
		if ln != nil {
			_ = b.acceptQueued(ln)
		}
	}
}
