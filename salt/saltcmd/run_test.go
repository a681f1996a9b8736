package saltcmd_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/oduflow/oduflow-go/salt"
	"github.com/oduflow/oduflow-go/salt/saltcmd"
	"github.com/oduflow/oduflow-go/salt/salttest"
)

// Every expected minion ends in exactly one state, over real sockets: returned (healthy,
// failing, slow but confirmed running by find_job), no response (frozen), not connected
// (offline per manage.present, and a list id without a key), return lost (find_job says
// finished, no return). None of the silent ones is a success.
func TestRunEveryMinionEndsInOneState(t *testing.T) {
	l := newLab(t, false)
	behaviors := map[int]salttest.MinionBehavior{
		3: {Delay: 900 * time.Millisecond}, // beyond Timeout: find_job must say running
		4: {Fail: true},
		5: {Frozen: true},
		6: {Disconnected: true},
		7: {LoseReturns: true},
	}
	ids := l.a.AddFleet("m", 8, func(i int) salttest.MinionBehavior { return behaviors[i] })
	target := salt.ListTarget(append(ids, "m-nokey")...)
	job, err := l.client.Run(ctxFor(t, 20*time.Second), saltcmd.Cmd{Target: target, Fun: "test.ping"})
	if err != nil {
		t.Fatal(err)
	}
	got, order, sum := collect(t, job)
	want := map[string]saltcmd.State{ids[0]: saltcmd.Returned, ids[1]: saltcmd.Returned, ids[2]: saltcmd.Returned,
		ids[3]: saltcmd.Returned, ids[4]: saltcmd.Returned, ids[5]: saltcmd.NoResponse,
		ids[6]: saltcmd.NotConnected, ids[7]: saltcmd.ReturnLost, "m-nokey": saltcmd.NotConnected}
	for id, st := range want {
		if got[id].State != st {
			t.Errorf("%s: state %s (%s), want %s", id, got[id].State, got[id].Reason, st)
		}
		if st != saltcmd.Returned && (got[id].Success || got[id].OK() || got[id].Reason == "") {
			t.Errorf("%s: silent minion reported %+v", id, got[id])
		}
	}
	if b, ok := got[ids[0]].Bool(); !ok || !b || got[ids[0]].Retcode != 0 {
		t.Errorf("healthy minion: %+v", got[ids[0]])
	}
	if r := got[ids[4]]; r.Success || r.Retcode != 1 || r.OK() {
		t.Errorf("failing minion: %+v", r)
	}
	if sum.Returned != 5 || sum.Failed != 1 || len(sum.NotReturned) != 4 || sum.AllOK() {
		t.Errorf("summary %+v", sum)
	}
	if sum.FindJobRounds < 1 {
		t.Errorf("find_job never polled: %+v", sum)
	}
	// The returns are streamed as they arrive: the slow minion comes after the fast ones, the
	// unkeyed one first of all (known from the publish reply).
	if order[0] != "m-nokey" || indexOf(order, ids[3]) < indexOf(order, ids[0]) {
		t.Errorf("order %v", order)
	}
	if n := l.a.PublicationCount("test.ping", string(job.JID())); n != 1 {
		t.Errorf("test.ping published %d times", n)
	}
}

func indexOf(s []string, v string) int {
	for i, e := range s {
		if e == v {
			return i
		}
	}
	return -1
}

// A minion that keeps running the job is polled with find_job until the run's context ends,
// then reported Running, not success and not silence.
func TestRunStillRunningAtDeadline(t *testing.T) {
	l := newLab(t, false)
	ids := l.a.AddFleet("h", 2, func(i int) salttest.MinionBehavior { return salttest.MinionBehavior{Hang: i == 1} })
	job, err := l.client.Run(ctxFor(t, 2*time.Second), saltcmd.Cmd{Target: salt.GlobTarget("h-*"), Fun: "test.ping"})
	if err != nil {
		t.Fatal(err)
	}
	got, _, sum := collect(t, job)
	if got[ids[0]].State != saltcmd.Returned || got[ids[1]].State != saltcmd.Running {
		t.Fatalf("got %+v", got)
	}
	if sum.FindJobRounds < 2 {
		t.Errorf("a running minion must be asked again every gather_job_timeout: %d rounds", sum.FindJobRounds)
	}
}

// Two masters whose buses both carry every return, and a minion that sends its return twice:
// each minion's answer counts once, the copies are counted as duplicates.
func TestRunTwoMastersEachAnswerOnce(t *testing.T) {
	l := newLab(t, true)
	l.a.MirrorReturnsTo(l.b)
	ids := l.a.AddFleet("d", 6, func(i int) salttest.MinionBehavior {
		// The last minion answers late, so that the copies of the others' returns are read
		// while the run still goes on.
		return salttest.MinionBehavior{DuplicateReturns: i%2 == 0, Delay: time.Duration(i/5) * 400 * time.Millisecond}
	})
	l.b.AddFleet("d", 6, nil)
	job, err := l.client.Run(ctxFor(t, 10*time.Second), saltcmd.Cmd{Target: salt.GlobTarget("d-*"), Fun: "test.ping"})
	if err != nil {
		t.Fatal(err)
	}
	got, _, sum := collect(t, job)
	for _, id := range ids {
		if !got[id].OK() {
			t.Errorf("%s: %+v", id, got[id])
		}
	}
	if sum.Returned != 6 {
		t.Errorf("returned %d", sum.Returned)
	}
	// Every return of the five fast minions came twice (bus B), three of them four times.
	if sum.Duplicates < 5 {
		t.Errorf("duplicates %d: the copies were not read, the test proves nothing (summary %+v)", sum.Duplicates, sum)
	}
	if n := l.b.PublicationCount("", ""); n != 0 {
		t.Errorf("master B published %d jobs; it must only be read", n)
	}
}

// A minion whose returns reach only master B (it answers there) is still seen: the client
// reads every bus.
func TestRunReturnOnTheOtherMastersBus(t *testing.T) {
	l := newLab(t, true)
	l.a.MirrorReturnsTo(l.b)
	// Master A's own bus drops every reader just after the publish; master B still carries them.
	l.a.AddFleet("o", 3, func(int) salttest.MinionBehavior { return salttest.MinionBehavior{Delay: 200 * time.Millisecond} })
	job, err := l.client.Run(ctxFor(t, 10*time.Second), saltcmd.Cmd{Target: salt.GlobTarget("o-*"), Fun: "test.ping"})
	if err != nil {
		t.Fatal(err)
	}
	l.a.CloseEventBus()
	got, _, sum := collect(t, job)
	for id, r := range got {
		if !r.OK() {
			t.Errorf("%s: %+v", id, r)
		}
	}
	if len(sum.Gaps) == 0 {
		t.Errorf("the disconnection of bus A is not reported: %+v", sum)
	}
}

// A bus gap during a run is reported on that run, and the minions still out are asked at once:
// the one whose return was lost in the gap ends ReturnLost, not success and not forgotten.
func TestRunBusGapReportedAndPolled(t *testing.T) {
	l := newLab(t, false)
	ids := l.a.AddFleet("g", 3, func(i int) salttest.MinionBehavior {
		switch i {
		case 1:
			return salttest.MinionBehavior{Delay: 300 * time.Millisecond}
		case 2:
			return salttest.MinionBehavior{LoseReturns: true}
		}
		return salttest.MinionBehavior{}
	})
	job, err := l.client.Run(ctxFor(t, 10*time.Second), saltcmd.Cmd{Target: salt.GlobTarget("g-*"), Fun: "test.ping",
		Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	// g-0000's return, read before the gap; then the bus goes away
	var first saltcmd.Result
	for r := range job.Results() {
		first = r
		break
	}
	if first.Minion != ids[0] {
		t.Fatalf("first result %+v, want %s's return", first, ids[0])
	}
	l.a.CloseEventBus()
	start := time.Now()
	got, _, sum := collect(t, job, first)
	if len(sum.Gaps) == 0 {
		t.Fatalf("gap not reported: %+v", sum)
	}
	if got[ids[1]].State != saltcmd.Returned || got[ids[2]].State != saltcmd.ReturnLost {
		t.Errorf("got %+v", got)
	}
	// Timeout is 5 s: only the gap can have triggered the find_job round this early.
	if time.Since(start) > 4*time.Second || sum.FindJobRounds == 0 {
		t.Errorf("the gap did not trigger a find_job round (%s, %d rounds)", time.Since(start), sum.FindJobRounds)
	}
}

// Positional args, name=value strings and kwargs reach the minion as Salt's CLI sends them.
func TestRunArgsAndKwargs(t *testing.T) {
	l := newLab(t, false)
	ids := l.a.AddFleet("a", 1, nil)
	job, err := l.client.Run(ctxFor(t, 10*time.Second), saltcmd.Cmd{Target: salt.ListTarget(ids...), Fun: "test.arg",
		Args: []any{"one", int64(2), "name=value"}, Kwargs: map[string]any{"flag": true},
		Metadata: map[string]any{"ticket": "T-1"}, Returner: ""})
	if err != nil {
		t.Fatal(err)
	}
	got, _, _ := collect(t, job)
	var ret struct {
		Args   []any          `json:"args"`
		Kwargs map[string]any `json:"kwargs"`
	}
	if err := got[ids[0]].Decode(&ret); err != nil {
		t.Fatal(err)
	}
	if len(ret.Args) != 2 || ret.Args[0] != "one" || ret.Args[1] != float64(2) ||
		ret.Kwargs["name"] != "value" || ret.Kwargs["flag"] != true {
		t.Errorf("minion saw %+v", ret)
	}
	pubs := l.a.Publications()
	last := pubs[len(pubs)-1]
	kw, ok := last.Args[len(last.Args)-1].(map[string]any)
	if !ok || kw["__kwarg__"] != true || kw["flag"] != true || last.Metadata["ticket"] != "T-1" {
		t.Errorf("publication %+v", last)
	}
}

// The general client refuses the dispatcher's functions before any I/O, with a typed error.
func TestGuardRefusesOduflowJob(t *testing.T) {
	l := newLab(t, false)
	l.a.AddFleet("x", 1, nil)
	for _, call := range []func() error{
		func() error {
			_, err := l.client.Run(ctxFor(t, 5*time.Second), saltcmd.Cmd{Target: salt.GlobTarget("*"), Fun: "oduflow_job.run"})
			return err
		},
		func() error {
			_, err := l.client.Async(ctxFor(t, 5*time.Second), saltcmd.Cmd{Target: salt.GlobTarget("*"), Fun: "oduflow_job.status"})
			return err
		},
		func() error {
			_, err := l.client.Batch(ctxFor(t, 5*time.Second), saltcmd.Cmd{Target: salt.GlobTarget("*"), Fun: "oduflow_job.run"},
				saltcmd.BatchSize{Count: 1})
			return err
		},
	} {
		err := call()
		if !errors.Is(err, saltcmd.ErrGuardedFunction) || !salt.IsNotPublished(err) {
			t.Errorf("err = %v", err)
		}
	}
	if n := l.a.PublicationCount("", ""); n != 0 {
		t.Errorf("%d publications", n)
	}
}

// Async returns the JID and expected minions at once; Watch collects later. A return fired
// before Watch subscribed is gone from the bus: without a job cache that minion is ReturnLost,
// with WithJobCache it is found by jobs.lookup_jid.
func TestAsyncThenWatch(t *testing.T) {
	for _, cache := range []bool{false, true} {
		t.Run(map[bool]string{false: "no_job_cache", true: "job_cache"}[cache], func(t *testing.T) {
			var opts []saltcmd.Option
			if cache {
				opts = append(opts, saltcmd.WithJobCache())
			}
			l := newLab(t, false, opts...)
			ids := l.a.AddFleet("w", 2, func(i int) salttest.MinionBehavior {
				return salttest.MinionBehavior{Delay: time.Duration(i) * 700 * time.Millisecond}
			})
			p, err := l.client.Async(ctxFor(t, 5*time.Second), saltcmd.Cmd{Target: salt.GlobTarget("w-*"), Fun: "test.ping"})
			if err != nil {
				t.Fatal(err)
			}
			if len(p.Minions) != 2 || p.JID == "" {
				t.Fatalf("published %+v", p)
			}
			// w-0000 has returned by now, unseen
			if err := l.a.WaitUntil(ctxFor(t, 5*time.Second), func() bool { return len(l.a.RunningJIDs(ids[0])) == 0 }); err != nil {
				t.Fatal(err)
			}
			job, err := l.client.Watch(ctxFor(t, 10*time.Second), p.JID, p.Minions)
			if err != nil {
				t.Fatal(err)
			}
			got, _, _ := collect(t, job)
			if !got[ids[1]].OK() {
				t.Errorf("late minion: %+v", got[ids[1]])
			}
			early := got[ids[0]]
			if cache {
				if b, ok := early.Bool(); early.State != saltcmd.Returned || !ok || !b || early.Retcode != -1 {
					t.Errorf("early minion from the job cache: %+v", early)
				}
			} else if early.State != saltcmd.ReturnLost {
				t.Errorf("early minion: %+v", early)
			}
		})
	}
}

// A forged return on the bus (an event a minion fired under another minion's tag) is not
// taken for that minion's answer.
func TestRunIgnoresForgedReturns(t *testing.T) {
	l := newLab(t, false)
	ids := l.a.AddFleet("f", 1, func(int) salttest.MinionBehavior { return salttest.MinionBehavior{Frozen: true} })
	job, err := l.client.Run(ctxFor(t, 10*time.Second), saltcmd.Cmd{Target: salt.ListTarget(ids...), Fun: "test.ping"})
	if err != nil {
		t.Fatal(err)
	}
	tag := "salt/job/" + string(job.JID()) + "/ret/" + ids[0]
	for _, data := range []map[string]any{
		{"cmd": "_minion_event", "id": ids[0], "return": true, "retcode": 0, "success": true, "jid": string(job.JID())},
		{"cmd": "_return", "id": "other", "return": true, "retcode": 0, "success": true, "jid": string(job.JID())},
	} {
		if err := l.a.FireEvent(tag, data); err != nil {
			t.Fatal(err)
		}
	}
	got, _, sum := collect(t, job)
	if got[ids[0]].State != saltcmd.NoResponse || sum.Ignored != 2 {
		t.Errorf("got %+v, summary %+v", got, sum)
	}
}

func TestValidateTarget(t *testing.T) {
	good := []salt.Target{
		salt.GlobTarget("web*"), salt.ListTarget("a", "b"), {Type: "grain", Expr: "os:Debian"},
		{Type: "grain_pcre", Expr: "os:Deb.*"}, {Type: "pillar", Expr: "role:web"}, {Type: "pcre", Expr: "web[0-9]+"},
		{Type: "compound", Expr: "G@os:Debian and ( web* or L@a,b ) and not E@db.*"},
		{Type: "nodegroup", Expr: "webservers"}, {Type: "ipcidr", Expr: "10.0.0.0/8"}, {Type: "ipcidr", Expr: "10.1.2.3"},
	}
	for _, tg := range good {
		if err := saltcmd.ValidateTarget(tg); err != nil {
			t.Errorf("%+v: %v", tg, err)
		}
	}
	bad := []salt.Target{
		{}, {Type: "glob"}, {Type: "list"}, salt.ListTarget("a,b"), salt.ListTarget(""), {Type: "grain", Expr: "os"},
		{Type: "pillar", Expr: ":x"}, {Type: "compound", Expr: "web* and"}, {Type: "compound", Expr: "( web*"},
		{Type: "compound", Expr: "web* db*"}, {Type: "compound", Expr: "X@foo"}, {Type: "compound", Expr: "G@"},
		{Type: "nodegroup", Expr: "a b"}, {Type: "ipcidr", Expr: "10.0.0.0/33"}, {Type: "range", Expr: "%x"},
		{Type: "glob", Expr: "web* db*"},
	}
	for _, tg := range bad {
		err := saltcmd.ValidateTarget(tg)
		if !errors.Is(err, saltcmd.ErrInvalidTarget) || !errors.Is(err, salt.ErrInvalidRequest) {
			t.Errorf("%+v: %v", tg, err)
		}
	}
}

// A bad target or function is refused before anything is sent.
func TestRunRefusesBeforeSending(t *testing.T) {
	l := newLab(t, false)
	l.a.AddFleet("r", 1, nil)
	for _, cmd := range []saltcmd.Cmd{
		{Target: salt.Target{Type: "grain", Expr: "os"}, Fun: "test.ping"},
		{Target: salt.GlobTarget("*"), Fun: "ping"},
		{Target: salt.GlobTarget("*"), Fun: "test.ping", Kwargs: map[string]any{"__kwarg__": true}},
	} {
		_, err := l.client.Run(ctxFor(t, 5*time.Second), cmd)
		if !salt.IsNotPublished(err) || !errors.Is(err, salt.ErrInvalidRequest) {
			t.Errorf("%+v: %v", cmd, err)
		}
	}
	if n := l.a.PublicationCount("", ""); n != 0 {
		t.Errorf("%d publications", n)
	}
}

// Publish errors come back typed as package salt types them.
func TestRunPublishErrorsTyped(t *testing.T) {
	l := newLab(t, false)
	_, err := l.client.Run(ctxFor(t, 5*time.Second), saltcmd.Cmd{Target: salt.GlobTarget("nobody*"), Fun: "test.ping"})
	if !errors.Is(err, salt.ErrNoMinions) || !strings.Contains(err.Error(), "test.ping") {
		t.Errorf("err = %v", err)
	}
}
