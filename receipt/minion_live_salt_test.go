package receipt_test

// Salt helpers of TestMinionModuleLiveIntegration: the recorded event bus,
// publications through the master, and receipts read from job returns.

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/oduflow/oduflow-go/receipt"
	"github.com/oduflow/oduflow-go/salt"
)

// liveBus records every event of one long-lived stream (it reconnects by
// itself after a master restart), so a test can wait for an event and later
// ask whether some event was ever seen.
type liveBus struct {
	stream *salt.EventStream
	mu     sync.Mutex
	evs    []salt.Event
	wake   chan struct{}
	done   chan struct{}
}

func newLiveBus(ctx context.Context, t *testing.T, addr string) *liveBus {
	t.Helper()
	s, err := salt.SubscribeEvents(ctx, addr, salt.WithTagPrefixes("salt/job/"),
		salt.WithReconnectBackoff(100*time.Millisecond, time.Second))
	if err != nil {
		t.Fatalf("subscribe to %s: %v", addr, err)
	}
	b := &liveBus{stream: s, wake: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(b.done)
		for ev := range s.Events() {
			b.mu.Lock()
			b.evs = append(b.evs, ev)
			close(b.wake)
			b.wake = make(chan struct{})
			b.mu.Unlock()
		}
	}()
	return b
}

func (b *liveBus) close() {
	_ = b.stream.Close()
	<-b.done
}

func (b *liveBus) mark() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.evs)
}

// wait returns the first event at index >= from accepted by match.
func (b *liveBus) wait(from int, d time.Duration, match func(salt.Event) bool) (salt.Event, bool) {
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	for {
		b.mu.Lock()
		for i := from; i < len(b.evs); i++ {
			if match(b.evs[i]) {
				ev := b.evs[i]
				b.mu.Unlock()
				return ev, true
			}
		}
		from = len(b.evs)
		wake := b.wake
		b.mu.Unlock()
		select {
		case <-wake:
		case <-deadline.C:
			return salt.Event{}, false
		}
	}
}

// seen lists (tag, kind) of every recorded event of one JID, and the gaps.
func (b *liveBus) seen(jid salt.JID) (tags []string, gaps []string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	prefix := "salt/job/" + string(jid) + "/"
	for _, ev := range b.evs {
		switch {
		case ev.Gap != nil:
			gaps = append(gaps, fmt.Sprintf("%s(dropped=%d)", ev.Gap.Reason, ev.Gap.Dropped))
		case strings.HasPrefix(ev.Tag, prefix):
			tags = append(tags, ev.Tag)
		}
	}
	return tags, gaps
}

func isReturn(jid salt.JID, minion string) func(salt.Event) bool {
	return func(ev salt.Event) bool {
		return ev.JobReturn != nil && ev.JobReturn.JID == jid && ev.JobReturn.MinionID == minion
	}
}

type liveRunner struct {
	t    *testing.T
	ctx  context.Context
	lab  liveLab
	bus  *liveBus
	jids *salt.JIDGenerator
	// tokens are the fencing tokens of the runs this test published, by request id: the module refuses
	// a run without one (fencing fails closed), and a publication repeated for a request carries its
	// request's token again, as a dispatcher's would.
	tokens map[string]uint64
}

// fenceToken is the request's fencing token: drawn once per request from the microsecond clock, so that
// it is above every token this minion has seen from earlier runs of the test (and below 2^53).
func (r *liveRunner) fenceToken(request string) uint64 {
	if r.tokens == nil {
		r.tokens = map[string]uint64{}
	}
	if tok, ok := r.tokens[request]; ok {
		return tok
	}
	tok := uint64(time.Now().UnixMicro())
	r.tokens[request] = tok
	return tok
}

// publish sends one job with a preassigned JID as root (the key file is read
// again for every request: it changes at every master start).
func (r *liveRunner) publish(fun string, args []any, jid salt.JID) error {
	c, err := salt.NewClient(r.lab.master, salt.WithAuth(salt.UserKey("root", r.lab.keyFile)),
		salt.WithRequestTimeout(30*time.Second))
	if err != nil {
		return err
	}
	defer c.Close()
	var kwargs map[string]any
	if request, ok := firstString(args); ok && fun == "oduflow_job.run" {
		kwargs = map[string]any{"fence_token": r.fenceToken(request)}
	}
	res, err := c.Publish(r.ctx, salt.PublishRequest{Target: salt.ListTarget(r.lab.minion), Fun: fun, Args: args, Kwargs: kwargs, JID: jid})
	if err != nil {
		return err
	}
	if res.JID != jid || !slices.Equal(res.Minions, []string{r.lab.minion}) || len(res.Missing) != 0 {
		return fmt.Errorf("publish %s: unexpected acknowledgement %+v", fun, *res)
	}
	return nil
}

// call publishes fun with a new JID and waits for the minion's return on the bus.
func (r *liveRunner) call(fun string, args ...any) (salt.JID, *salt.JobReturn) {
	r.t.Helper()
	jid := r.jids.Next()
	return jid, r.callJID(jid, fun, args...)
}

func (r *liveRunner) callJID(jid salt.JID, fun string, args ...any) *salt.JobReturn {
	r.t.Helper()
	from := r.bus.mark()
	if err := r.publish(fun, args, jid); err != nil {
		r.t.Fatalf("publish %s jid=%s: %v", fun, jid, err)
	}
	ev, ok := r.bus.wait(from, 60*time.Second, isReturn(jid, r.lab.minion))
	if !ok {
		r.t.Fatalf("%s jid=%s: no return on the event bus within 60s", fun, jid)
	}
	return ev.JobReturn
}

// waitMinion polls test.ping until the minion answers through the master.
func (r *liveRunner) waitMinion(d time.Duration) {
	r.t.Helper()
	start := time.Now()
	for attempt := 1; time.Since(start) < d; attempt++ {
		jid := r.jids.Next()
		from := r.bus.mark()
		if err := r.publish("test.ping", nil, jid); err != nil {
			r.t.Logf("  test.ping attempt %d: %v", attempt, err)
			// a retry against the live master after a failed publish (live test only)
			time.Sleep(time.Second)
			continue
		}
		if ev, ok := r.bus.wait(from, 5*time.Second, isReturn(jid, r.lab.minion)); ok && ev.JobReturn.Return == true {
			r.t.Logf("  minion answers test.ping (jid=%s, attempt %d, after %s)", jid, attempt, time.Since(start).Round(time.Millisecond))
			return
		}
		r.t.Logf("  test.ping attempt %d (jid=%s): no answer yet", attempt, jid)
	}
	r.t.Fatalf("the minion did not answer test.ping within %s", d)
}

// receiptOf validates a job return as a receipt bound to want.
func receiptOf(t *testing.T, ret *salt.JobReturn, want receipt.Binding) receipt.Receipt {
	t.Helper()
	if ret.Retcode != 0 {
		t.Fatalf("jid=%s: retcode %d, return %v", ret.JID, ret.Retcode, ret.Return)
	}
	rc, err := receipt.FromValue(ret.Return)
	if err != nil {
		t.Fatalf("jid=%s: return is not a valid receipt: %v (return %v)", ret.JID, err, ret.Return)
	}
	if err := want.Check(rc); err != nil {
		t.Fatalf("jid=%s: receipt %+v rejected for %+v: %v", ret.JID, rc, want, err)
	}
	return rc
}

func encoded(t *testing.T, r receipt.Receipt) string {
	t.Helper()
	b, err := r.Encode()
	if err != nil {
		t.Fatalf("encode %+v: %v", r, err)
	}
	return string(b)
}

// firstString is args[0] when it is a string.
func firstString(args []any) (string, bool) {
	if len(args) == 0 {
		return "", false
	}
	s, ok := args[0].(string)
	return s, ok
}
