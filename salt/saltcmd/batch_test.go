package saltcmd_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/oduflow/oduflow-go/salt"
	"github.com/oduflow/oduflow-go/salt/saltcmd"
	"github.com/oduflow/oduflow-go/salt/salttest"
)

// concurrency registers fun on every minion: it sleeps the minion's delay and records how many
// minions ran it at once.
type concurrency struct {
	mu       sync.Mutex
	now, max int
	starts   []string
}

// maxAtOnce is the most minions that ran fun at once so far. The handlers run on the
// simulator's goroutines, and the returns reach the test through a socket, which orders
// nothing for the race detector: read under the lock.
func (c *concurrency) maxAtOnce() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.max
}

func (c *concurrency) handler(delay func(id string) time.Duration) salttest.MinionHandler {
	return func(ctx context.Context, job salttest.Job) (any, int) {
		c.mu.Lock()
		c.now++
		c.max = max(c.max, c.now)
		c.starts = append(c.starts, job.MinionID)
		c.mu.Unlock()
		defer func() { c.mu.Lock(); c.now--; c.mu.Unlock() }()
		select {
		case <-time.After(delay(job.MinionID)):
		case <-ctx.Done():
		}
		return "done", 0
	}
}

// salt -b 3 on 10 minions: never more than 3 at once, and a freed slot goes to the next minion
// at once (a sliding window, not waves): the nine fast minions all start while the slow one of
// the first window still runs. Every minion returns once.
func TestBatchSlidingWindow(t *testing.T) {
	l := newLab(t, false)
	ids := l.a.AddFleet("b", 10, nil)
	var cc concurrency
	var slowEnd time.Time
	var mu sync.Mutex
	starts := map[string]time.Time{}
	l.a.RegisterFunc("cmd.run", func(ctx context.Context, job salttest.Job) (any, int) {
		mu.Lock()
		starts[job.MinionID] = time.Now()
		mu.Unlock()
		d := 100 * time.Millisecond
		if job.MinionID == ids[0] {
			d = 2 * time.Second // one slow minion must not hold its window
		}
		ret, rc := cc.handler(func(string) time.Duration { return d })(ctx, job)
		if job.MinionID == ids[0] {
			mu.Lock()
			slowEnd = time.Now()
			mu.Unlock()
		}
		return ret, rc
	})
	job, err := l.client.Batch(ctxFor(t, 30*time.Second), saltcmd.Cmd{Target: salt.GlobTarget("b-*"), Fun: "cmd.run",
		Args: []any{"true"}}, saltcmd.BatchSize{Count: 3})
	if err != nil {
		t.Fatal(err)
	}
	got, _, sum := collect(t, job)
	for _, id := range ids {
		if txt, ok := got[id].Text(); !ok || txt != "done" {
			t.Errorf("%s: %+v", id, got[id])
		}
	}
	if m := cc.maxAtOnce(); m > 3 || m < 2 {
		t.Errorf("at most %d minions ran at once, want 3", m)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, id := range ids[1:] {
		if !starts[id].Before(slowEnd) {
			t.Errorf("%s started at %s, after the slow minion ended: slots were not given as they freed",
				id, starts[id].Sub(slowEnd))
		}
	}
	if !sum.AllOK() || len(sum.JIDs) < 5 { // the ping, then one sub-job per freed slot (waves: 4)
		t.Errorf("summary %+v", sum)
	}
	if n := l.a.PublicationCount("cmd.run", ""); n != len(sum.JIDs)-1 {
		t.Errorf("%d cmd.run publications, %d sub-jobs", n, len(sum.JIDs)-1)
	}
}

func TestParseBatchSize(t *testing.T) {
	for in, want := range map[string]saltcmd.BatchSize{"3": {Count: 3}, "10%": {Percent: 10}, "%25": {Percent: 25}} {
		got, err := saltcmd.ParseBatchSize(in)
		if err != nil || got != want {
			t.Errorf("%q: %+v %v", in, got, err)
		}
	}
	for _, in := range []string{"", "0", "-1", "x", "0%", "101%", "1.5"} {
		if _, err := saltcmd.ParseBatchSize(in); !errors.Is(err, saltcmd.ErrInvalidCommand) {
			t.Errorf("%q: %v", in, err)
		}
	}
}

// 25% of 8 minions is 2 at once.
func TestBatchPercent(t *testing.T) {
	l := newLab(t, false)
	l.a.AddFleet("p", 8, nil)
	var cc concurrency
	l.a.RegisterFunc("cmd.run", cc.handler(func(string) time.Duration { return 80 * time.Millisecond }))
	job, err := l.client.Batch(ctxFor(t, 20*time.Second), saltcmd.Cmd{Target: salt.GlobTarget("p-*"), Fun: "cmd.run"},
		saltcmd.BatchSize{Percent: 25})
	if err != nil {
		t.Fatal(err)
	}
	_, _, sum := collect(t, job)
	if m := cc.maxAtOnce(); !sum.AllOK() || m != 2 {
		t.Errorf("max %d at once, summary %+v", m, sum)
	}
}

// A failure threshold stops giving out slots; the minions never started end NotRun, and the
// minions that did not answer the presence ping get no job and keep the ping's state.
func TestBatchFailureThresholdAndPresencePing(t *testing.T) {
	l := newLab(t, false)
	ids := l.a.AddFleet("f", 6, func(i int) salttest.MinionBehavior {
		return salttest.MinionBehavior{Fail: i < 2, Frozen: i == 5}
	})
	job, err := l.client.Batch(ctxFor(t, 20*time.Second), saltcmd.Cmd{Target: salt.GlobTarget("f-*"), Fun: "test.ping"},
		saltcmd.BatchSize{Count: 1}, saltcmd.BatchMaxFailures(2))
	if err != nil {
		t.Fatal(err)
	}
	got, _, sum := collect(t, job)
	for i, want := range []saltcmd.State{saltcmd.Returned, saltcmd.Returned, saltcmd.NotRun, saltcmd.NotRun,
		saltcmd.NotRun, saltcmd.NoResponse} {
		if got[ids[i]].State != want {
			t.Errorf("%s: %s (%s), want %s", ids[i], got[ids[i]].State, got[ids[i]].Reason, want)
		}
	}
	if !strings.Contains(got[ids[5]].Reason, "presence ping") {
		t.Errorf("frozen minion reason %q", got[ids[5]].Reason)
	}
	if sum.Failed != 2 || sum.Returned != 2 || len(sum.NotReturned) != 4 {
		t.Errorf("summary %+v", sum)
	}
	if n := l.a.PublicationCount("test.ping", ""); n != 3 { // the presence ping and two sub-jobs
		t.Errorf("%d test.ping publications", n)
	}
}

// BatchWait keeps a returned minion's slot closed for a while.
func TestBatchWait(t *testing.T) {
	l := newLab(t, false)
	l.a.AddFleet("w", 3, nil)
	start := time.Now()
	job, err := l.client.Batch(ctxFor(t, 20*time.Second), saltcmd.Cmd{Target: salt.GlobTarget("w-*"), Fun: "test.ping"},
		saltcmd.BatchSize{Count: 1}, saltcmd.BatchWait(250*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	_, _, sum := collect(t, job)
	if !sum.AllOK() || time.Since(start) < 500*time.Millisecond {
		t.Errorf("took %s, summary %+v", time.Since(start), sum)
	}
}
