package saltcmd

import (
	"context"
	"sync"

	"github.com/cockroachdb/errors"

	"github.com/oduflow/oduflow-go/salt"
)

// busEvent is one event and the index of the bus it came from.
type busEvent struct {
	bus int
	ev  salt.Event
}

// busSet merges the event buses of a run into one channel.
type busSet struct {
	streams []*salt.EventStream
	events  chan busEvent
	cancel  context.CancelFunc
	wg      sync.WaitGroup
}

// subscribe connects to every bus before anything is published (the bus has no replay).
func (c *Client) subscribe(ctx context.Context) (*busSet, error) {
	sctx, cancel := context.WithCancel(ctx)
	b := &busSet{events: make(chan busEvent, 4096), cancel: cancel}
	opts := []salt.EventOption{salt.WithEventBuffer(16384, 48<<20)}
	opts = append(opts, c.eventOpts...)
	opts = append(opts, salt.WithTagPrefixes("salt/job/", "salt/run/"))
	for i, addr := range c.buses {
		s, err := salt.SubscribeEvents(sctx, addr, opts...)
		if err != nil {
			b.close()
			return nil, errors.Wrapf(err, "saltcmd: subscribe to event bus %d", i)
		}
		b.streams = append(b.streams, s)
		b.wg.Add(1)
		go func() {
			defer b.wg.Done()
			for ev := range s.Events() {
				select {
				case b.events <- busEvent{bus: i, ev: ev}:
				case <-sctx.Done():
					return
				}
			}
		}()
	}
	return b, nil
}

func (b *busSet) close() {
	b.cancel()
	for _, s := range b.streams {
		_ = s.Close()
	}
	b.wg.Wait()
}
