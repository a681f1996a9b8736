package oduflow

import (
	"context"
	"iter"
	"strconv"
	"sync"
	"time"

	"github.com/oduflow/oduflow-go/oduflow/claims"
	"github.com/oduflow/oduflow-go/receipt"
)

// Watch rechecks: a request's status changes with a claim write (every one this process makes wakes its
// watchers at once, and so does every one a store with a change feed reports from other processes), or
// with time alone while it runs (a worker that disappears: launch grace, hard deadline). A running request
// is read again every watchRunningRecheck; any other one every watchIdleRecheck, a safety net for a store
// without a change feed written by another process.
const (
	watchRunningRecheck = 5 * time.Second
	watchIdleRecheck    = 30 * time.Second
)

// Watch yields the request's status now, then each change of it, until the request is succeeded or failed
// (a verified terminal status; unknown is not one: a late receipt can still turn it into either), or ctx
// ends (then it yields ctx's error last). A read that fails yields its error and ends the watch. Breaking
// out of the loop ends it too.
//
// It does not poll: claim writes wake it, the ones of this Dispatcher's own workers at once and, when the
// store has a change feed (claims.ChangeFeed: the file store watches its directory with inotify, so a
// detached worker's or another replica's writes count too), the others' as they land. While a request
// runs it is also read again every few seconds, for what changes with time alone (a worker that
// disappeared). A watch costs no goroutine of its own while it waits: it runs in the caller's, and only a
// map entry and a channel stand for it in the Dispatcher.
//
//	for r, err := range d.Watch(ctx, minion, request, receipt.ProfileConfigure) {
//		if err != nil {
//			return err
//		}
//		fmt.Println(r.Status, r.Passed, "/", r.Total)
//	}
func (d *Dispatcher) Watch(ctx context.Context, minion, request string, profile receipt.Profile) iter.Seq2[Response, error] {
	return func(yield func(Response, error) bool) {
		watchLoop(ctx, d, request, func(ctx context.Context) (Response, error) {
			return d.Status(ctx, minion, request, profile)
		}, func(r Response) (receipt.Status, string) { return r.Status, r.String() }, yield)
	}
}

// CustomWatch is Watch for a custom execution: CustomStatus now, then each change, until succeeded or
// failed.
func (d *Dispatcher) CustomWatch(ctx context.Context, minion, request string) iter.Seq2[CustomResponse, error] {
	return func(yield func(CustomResponse, error) bool) {
		watchLoop(ctx, d, request, func(ctx context.Context) (CustomResponse, error) {
			return d.CustomStatus(ctx, minion, request)
		}, func(r CustomResponse) (receipt.Status, string) {
			jid := "null"
			if r.JID != nil {
				jid = *r.JID
			}
			return r.Status, r.ExecutionID + " " + jid + " " + string(r.Status) + " " + string(r.ErrorCode) + " " + r.Reused +
				" " + strconv.Itoa(r.Passed) + "/" + strconv.Itoa(r.Total)
		}, yield)
	}
}

// watchLoop reads with get, yields what changed (key tells two reads apart), and waits for a wake-up, until
// the status is terminal, ctx ends or yield says stop.
func watchLoop[R any](ctx context.Context, d *Dispatcher, request string, get func(context.Context) (R, error),
	key func(R) (receipt.Status, string), yield func(R, error) bool) {
	var zero R
	// Registered before the first read, so that a write between that read and the wait is not missed.
	w := d.watchers.add(request)
	defer d.watchers.remove(request, w)
	d.startChangeFeed()
	timer := time.NewTimer(watchIdleRecheck)
	defer timer.Stop()
	last, first := "", true
	for {
		r, err := get(ctx)
		if err != nil {
			if ctx.Err() != nil {
				err = ctx.Err()
			}
			yield(zero, err)
			return
		}
		status, k := key(r)
		if first || k != last {
			if !yield(r, nil) {
				return
			}
			first, last = false, k
		}
		if status.Terminal() {
			return
		}
		every := watchIdleRecheck
		if status == receipt.StatusRunning {
			every = watchRunningRecheck
		}
		timer.Reset(every)
		select {
		case <-ctx.Done():
			yield(zero, ctx.Err())
			return
		case <-w:
		case <-timer.C:
		}
	}
}

// watchers are the Watch calls waiting, by request id: a wake-up channel each (capacity 1: a wake-up that
// finds one pending is merged into it, the watcher reads the status again either way).
type watchers struct {
	mu    sync.Mutex
	byReq map[string]map[chan struct{}]struct{}
}

func (ws *watchers) add(request string) chan struct{} {
	ch := make(chan struct{}, 1)
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if ws.byReq == nil {
		ws.byReq = make(map[string]map[chan struct{}]struct{})
	}
	set := ws.byReq[request]
	if set == nil {
		set = make(map[chan struct{}]struct{}, 1)
		ws.byReq[request] = set
	}
	set[ch] = struct{}{}
	return ch
}

func (ws *watchers) remove(request string, ch chan struct{}) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	set := ws.byReq[request]
	delete(set, ch)
	if len(set) == 0 {
		delete(ws.byReq, request)
	}
}

// changed wakes the watchers of request (if any); it never blocks.
func (ws *watchers) changed(request string) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	for ch := range ws.byReq[request] {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// watching reports whether anyone watches request (the change feed's filter, without waking anyone).
func (ws *watchers) watching() bool {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	return len(ws.byReq) > 0
}

// startChangeFeed starts, once, the goroutine that follows the store's change feed (claims.ChangeFeed) for
// the life of the Dispatcher, so that writes of other processes wake this one's watchers. A store
// without a feed has none: its other writers are seen at the rechecks.
func (d *Dispatcher) startChangeFeed() {
	d.feedOnce.Do(func() {
		feed, ok := d.store.(claims.ChangeFeed)
		if !ok {
			return
		}
		// Not one of the workers Close drains (d.wg): it ends when Close cancels the Dispatcher's context,
		// and Close waits for it then. Started only before Close begins, so that Add precedes that Wait.
		d.gate.RLock()
		defer d.gate.RUnlock()
		if d.closing {
			return
		}
		d.feedWG.Add(1)
		go func() {
			defer d.feedWG.Done()
			for d.ctx.Err() == nil {
				err := feed.WatchChanges(d.ctx, d.watchers.changed)
				if d.ctx.Err() != nil {
					return
				}
				d.log.Warn("claim store change feed ended; watchers fall back to rechecks", "error", err)
				select {
				case <-d.ctx.Done():
					return
				case <-time.After(watchRunningRecheck):
				}
			}
		}()
	})
}
