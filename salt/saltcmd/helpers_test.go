package saltcmd_test

import (
	"context"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/oduflow/oduflow-go/salt"
	"github.com/oduflow/oduflow-go/salt/saltcmd"
	"github.com/oduflow/oduflow-go/salt/salttest"
)

// lab is one or two simulated masters with a client publishing through the first.
type lab struct {
	t      testing.TB
	a, b   *salttest.Master
	pub    *salt.Client
	client *saltcmd.Client
}

func startMaster(t testing.TB, opts ...salttest.Option) *salttest.Master {
	t.Helper()
	dir, err := os.MkdirTemp("", "sc") // short: the event socket path is limited to 107 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	m, err := salttest.Start(context.Background(), append([]salttest.Option{salttest.WithDir(dir)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close() })
	return m
}

// newLab starts master A (and B when two) and a saltcmd client reading both buses.
func newLab(t testing.TB, two bool, opts ...saltcmd.Option) *lab {
	t.Helper()
	l := &lab{t: t, a: startMaster(t)}
	pub, err := salt.NewClient(l.a.Addr(), salt.WithAuth(salt.UserKey("root", l.a.KeyFile())))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pub.Close() })
	l.pub = pub
	if two {
		l.b = startMaster(t)
		opts = append(opts, saltcmd.WithEventBus(l.b.EventsAddr()))
	}
	opts = append([]saltcmd.Option{saltcmd.WithTimeouts(300*time.Millisecond, 500*time.Millisecond)}, opts...)
	c, err := saltcmd.New(pub, l.a.EventsAddr(), opts...)
	if err != nil {
		t.Fatal(err)
	}
	l.client = c
	return l
}

// collect drains a job: results by minion (failing on a minion seen twice) and the summary.
func collect(t testing.TB, job *saltcmd.Job, seen ...saltcmd.Result) (map[string]saltcmd.Result, []string, saltcmd.Summary) {
	t.Helper()
	got := map[string]saltcmd.Result{}
	var order []string
	for _, r := range seen { // read from the job before (nextResult)
		got[r.Minion] = r
		order = append(order, r.Minion)
	}
	for r := range job.Results() {
		if _, dup := got[r.Minion]; dup {
			t.Errorf("minion %s yielded twice", r.Minion)
		}
		got[r.Minion] = r
		order = append(order, r.Minion)
	}
	sum := job.Wait()
	want := job.Minions()
	slices.Sort(want)
	have := slices.Sorted(func(yield func(string) bool) {
		for id := range got {
			if !yield(id) {
				return
			}
		}
	})
	if !slices.Equal(want, have) {
		t.Errorf("minions accounted for %v, want exactly %v", have, want)
	}
	return got, order, sum
}

func ctxFor(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}
