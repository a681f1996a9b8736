package salttest

import (
	"context"
	"errors"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/oduflow/oduflow-go/internal/testwait"
)

func pingLoad(jid string) []any {
	return publishLoad("test.ping", []any{labMinion}, "list", []any{}, "jid", jid)
}

// TestDropNextReply: the publish is processed and published, the client never hears back.
func TestDropNextReply(t *testing.T) {
	s := startLab(t)
	evs := dialEvents(t, s.EventsAddr())
	waitReaders(t, s, 1)
	s.DropNextReply("publish")
	_, err := zreq(t, s.Addr(), envelope(t, 3, pingLoad("20261129170000000010")...), 300*time.Millisecond)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want a timeout", err)
	}
	evs.waitTag(t, "salt/job/20261129170000000010/ret/"+labMinion)
	if n := s.PublicationCount("test.ping", ""); n != 1 {
		t.Errorf("publications = %d", n)
	}
	// only one occurrence was armed
	if got := call(t, s, pingLoad("20261129170000000011")...); mget(t, got, "load", "jid") != "20261129170000000011" {
		t.Errorf("second publish %s", shape(got, ""))
	}
	// "" matches any command
	s.DropNextReply("")
	if _, err := zreq(t, s.Addr(), envelope(t, 3, "cmd", "ping"), 200*time.Millisecond); err == nil {
		t.Error("ping answered despite DropNextReply(\"\")")
	}
}

// TestDropNextReplyByFunction: a selector with a dot names the published function: the faults wait for
// its publication and let every other one through (a dispatcher's preflight capabilities call is a
// publish too, so "publish" used to hit it instead of the run).
func TestDropNextReplyByFunction(t *testing.T) {
	s := startLab(t)
	s.DropNextReply("test.version")
	if got := call(t, s, pingLoad("20261129170000000020")...); mget(t, got, "load", "jid") != "20261129170000000020" {
		t.Fatalf("test.ping's reply was dropped: %s", shape(got, ""))
	}
	load := publishLoad("test.version", []any{labMinion}, "list", []any{}, "jid", "20261129170000000021")
	if _, err := zreq(t, s.Addr(), envelope(t, 3, load...), 300*time.Millisecond); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("test.version answered: %v", err)
	}
	if n := s.PublicationCount("test.version", ""); n != 1 {
		t.Errorf("test.version publications = %d, want 1 (processed, not answered)", n)
	}
	if got := call(t, s, pingLoad("20261129170000000022")...); mget(t, got, "load", "jid") != "20261129170000000022" {
		t.Errorf("only one occurrence was armed: %s", shape(got, ""))
	}
}

func TestDelayAndMalformReply(t *testing.T) {
	s := startLab(t)
	s.DelayNextReply("ping", 300*time.Millisecond)
	start := time.Now()
	if _, err := zreq(t, s.Addr(), envelope(t, 3, "cmd", "ping"), 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < 300*time.Millisecond {
		t.Errorf("reply after %v", d)
	}
	s.DelayNextReply("publish", time.Second)
	if _, err := zreq(t, s.Addr(), envelope(t, 3, pingLoad("20261129170000000012")...), 200*time.Millisecond); err == nil {
		t.Error("delayed reply arrived early")
	}
	if n := s.PublicationCount("", ""); n != 1 {
		t.Errorf("delayed publish not processed at once: %d", n)
	}
	s.MalformNextReply("publish")
	r, err := zreq(t, s.Addr(), envelope(t, 3, pingLoad("20261129170000000013")...), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := unpack(r.body); err == nil {
		t.Errorf("malformed reply decodes: %x", r.body)
	}
	if n := s.PublicationCount("", ""); n != 2 {
		t.Errorf("malformed publish not processed: %d", n)
	}
}

func TestExceptionNextReply(t *testing.T) {
	s := startLab(t)
	s.ExceptionNextReply("publish")
	r, err := zreq(t, s.Addr(), envelope(t, 3, pingLoad("20261129170000000014")...), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if v, err := unpack(r.body); err != nil || v != replyException {
		t.Fatalf("reply %v %v", v, err)
	}
	if n := s.PublicationCount("", ""); n != 0 {
		t.Errorf("published despite the exception: %d", n)
	}
	// One occurrence only: the next publish goes out.
	if _, err := zreq(t, s.Addr(), envelope(t, 3, pingLoad("20261129170000000015")...), 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if n := s.PublicationCount("", ""); n != 1 {
		t.Errorf("publications %d", n)
	}
}

func TestReturnFaultsAndDedupe(t *testing.T) {
	s := startLab(t)
	var mu sync.Mutex
	runs := map[string]int{}
	s.AddMinion(labMinion, func(_ context.Context, job Job) (any, int) {
		mu.Lock()
		runs[job.JID]++
		mu.Unlock()
		return true, 0
	})
	evs := dialEvents(t, s.EventsAddr())
	waitReaders(t, s, 1)
	retTag := func(j string) string { return "salt/job/" + j + "/ret/" + labMinion }

	s.DropNextReturn("20261129170000000020")
	call(t, s, pingLoad("20261129170000000020")...)
	s.DuplicateNextReturn("")
	call(t, s, pingLoad("20261129170000000021")...)
	evs.waitTag(t, retTag("20261129170000000021"))
	evs.waitTag(t, retTag("20261129170000000021"))
	// same jid again: the minion remembers it, no second run
	call(t, s, pingLoad("20261129170000000021")...)
	// after a minion restart the jid queue is gone: it runs again
	call(t, s, pingLoad("20261129170000000022")...)
	evs.waitTag(t, retTag("20261129170000000022"))
	s.RestartMinion(labMinion)
	call(t, s, pingLoad("20261129170000000021")...)
	ev := evs.waitTag(t, "salt/job/*")
	for ev.tag != retTag("20261129170000000021") {
		if ev.tag == retTag("20261129170000000020") {
			t.Fatal("dropped return was fired")
		}
		ev = evs.waitTag(t, "salt/job/*")
	}
	if n := s.PublicationCount("", ""); n != 5 {
		t.Errorf("publications = %d", n)
	}
	ok := func() bool {
		mu.Lock()
		defer mu.Unlock()
		return runs["20261129170000000020"] == 1 && runs["20261129170000000021"] == 2 &&
			runs["20261129170000000022"] == 1
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
	_ = s.WaitUntil(ctx, ok) // job 20 has no bus event: its job's end wakes the wait
	cancel()
	waitIdle(t, s, labMinion)
	mu.Lock()
	defer mu.Unlock()
	if !(runs["20261129170000000020"] == 1 && runs["20261129170000000021"] == 2 && runs["20261129170000000022"] == 1) {
		t.Errorf("runs %v: the jid queue must stop the repeat, a minion restart must not", runs)
	}
}

// TestMinionLifecycle: a blocking handler is visible to find_job, is killed by RestartMinion
// (no return), and an offline minion is listed but never runs.
func TestMinionLifecycle(t *testing.T) {
	s := startLab(t)
	release := make(chan struct{})
	s.AddMinion(labMinion, functions(map[string]MinionHandler{
		"state.apply": blockingHandler(release, stateApply(labRoles(), false)),
		"test.ping":   testPing(),
		"boom":        func(context.Context, Job) (any, int) { panic("kaput") },
	}))
	evs := dialEvents(t, s.EventsAddr())
	waitReaders(t, s, 1)
	call(t, s, publishLoad("state.apply", []any{labMinion}, "list", []any{"roles.client_stack"},
		"jid", "20261129170000000030")...)
	call(t, s, publishLoad("saltutil.find_job", []any{labMinion}, "list", []any{"20261129170000000030"},
		"jid", "20261129170000000031")...)
	fj := evs.waitTag(t, "salt/job/20261129170000000031/ret/"+labMinion)
	if mget(t, fj.data, "return", "fun") != "state.apply" {
		t.Errorf("find_job %s", shape(fj.data, ""))
	}
	s.RestartMinion(labMinion)
	waitIdle(t, s, labMinion)
	call(t, s, publishLoad("boom", []any{labMinion}, "list", []any{}, "jid", "20261129170000000032")...)
	ev := evs.waitTag(t, "salt/job/*")
	for ev.tag != "salt/job/20261129170000000032/ret/"+labMinion {
		if ev.tag == "salt/job/20261129170000000030/ret/"+labMinion {
			t.Fatal("killed job returned")
		}
		ev = evs.waitTag(t, "salt/job/*")
	}
	if mget(t, ev.data, "retcode") != int64(1) || mget(t, ev.data, "out") != "nested" {
		t.Errorf("panicking handler: %s", shape(ev.data, ""))
	}
	waitIdle(t, s, labMinion)
	s.SetMinionOnline(labMinion, false)
	got := call(t, s, pingLoad("20261129170000000033")...)
	if shape(mget(t, got, "load", "minions"), "") != `["`+labMinion+`"]` {
		t.Errorf("offline minion not listed: %s", shape(got, ""))
	}
	if len(s.runningJIDs(labMinion)) != 0 {
		t.Error("offline minion runs")
	}
	close(release)
}

// TestCloseStopsBlockingHandler: Close cancels a handler that blocks.
func TestCloseStopsBlockingHandler(t *testing.T) {
	s, err := Start(context.Background(), WithDir(shortDir(t)), withRootKey(labRootKey))
	if err != nil {
		t.Fatal(err)
	}
	stopped := make(chan struct{})
	s.AddMinion(labMinion, func(ctx context.Context, _ Job) (any, int) {
		<-ctx.Done()
		close(stopped)
		return nil, 1
	})
	call(t, s, pingLoad("")...)
	waitSim(t, s, "the job never started", func() bool { return len(s.runningJIDs(labMinion)) > 0 })
	start := time.Now()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	<-stopped
	if time.Since(start) > 2*time.Second {
		t.Error("Close was slow")
	}
	if err := s.FireEvent("x", nil); !errors.Is(err, ErrClosed) {
		t.Errorf("FireEvent after Close: %v", err)
	}
}

// TestHeartbeat: a PING sent while a request is pending reaches the zmq4 REQ client as a
// command message before the real reply; the ROUTER answers a client PING with PONG.
func TestHeartbeat(t *testing.T) {
	s := startLab(t)
	s.DelayNextReply("ping", 400*time.Millisecond)
	done := make(chan reqResult, 1)
	go func() {
		r, err := zreq(t, s.Addr(), envelope(t, 3, "cmd", "ping"), 5*time.Second)
		if err != nil {
			t.Error(err)
		}
		done <- r
	}()
	// the request's connection is not announced: PING until one reached it
	testwait.Poll(2*time.Second, func() bool { return s.heartbeat() > 0 })
	r := <-done
	if r.pings < 1 {
		t.Errorf("pings seen = %d", r.pings)
	}
	if v, err := unpack(r.body); err != nil || shape(v, "") != `{"cmd":"ping"}` {
		t.Errorf("reply after ping: %v %v", v, err)
	}
	// periodic heartbeats
	s2 := startLab(t, WithHeartbeat(50*time.Millisecond))
	s2.DelayNextReply("ping", 300*time.Millisecond)
	r2, err := zreq(t, s2.Addr(), envelope(t, 3, "cmd", "ping"), 5*time.Second)
	if err != nil || r2.pings < 2 {
		t.Errorf("periodic heartbeat: pings %d err %v", r2.pings, err)
	}
}

// TestEventBusFaults: CloseEventBus drops readers (they reconnect), a slow reader is dropped,
// FireEvent reaches readers.
func TestEventBusFaults(t *testing.T) {
	s := startLab(t, withEventReaderBuffer(4))
	evs := dialEvents(t, s.EventsAddr())
	waitReaders(t, s, 1)
	if err := s.FireEvent("custom/tag", map[string]any{"a": 1}); err != nil {
		t.Fatal(err)
	}
	if ev := evs.waitTag(t, "custom/tag"); mget(t, ev.data, "a") != int64(1) || !ev.data.Has("_stamp") {
		t.Errorf("fired %s", shape(ev.data, ""))
	}
	s.CloseEventBus()
	if _, err := evs.next(2 * time.Second); err == nil {
		t.Error("reader not disconnected")
	}
	slow := dialEvents(t, s.EventsAddr())
	_ = slow
	waitReaders(t, s, 1)
	big := map[string]any{"blob": string(make([]byte, 1<<20))}
	for i := 0; i < 64 && s.EventReaders() > 0; i++ {
		_ = s.FireEvent("flood", big)
	}
	if s.EventReaders() != 0 {
		t.Error("slow reader still connected")
	}
}

// TestRestart: same addresses, new root key, readers disconnected, old key refused.
func TestRestart(t *testing.T) {
	s := startLab(t, withEventTCP())
	reqAddr, tcpAddr := s.Addr(), s.eventTCPAddr()
	evs := dialEvents(t, s.EventsAddr())
	waitReaders(t, s, 1)
	oldKey := s.currentRootKey()
	if err := s.Restart(context.Background()); err != nil {
		t.Fatal(err)
	}
	if s.Addr() != reqAddr || s.eventTCPAddr() != tcpAddr {
		t.Errorf("addresses changed: %s %s", s.Addr(), s.eventTCPAddr())
	}
	if _, err := evs.next(2 * time.Second); err == nil {
		t.Error("event reader survived the restart")
	}
	b, _ := os.ReadFile(s.KeyFile())
	if string(b) == oldKey || string(b) != s.currentRootKey() {
		t.Error("key not rotated")
	}
	got := call(t, s, pingLoad("")...)
	if mget(t, got, "error", "name") != "AuthenticationError" {
		t.Errorf("old key accepted: %s", shape(got, ""))
	}
	evs2 := dialEvents(t, tcpAddrURL(s))
	waitReaders(t, s, 1)
	got = call(t, s, publishLoad("test.ping", []any{labMinion}, "list", []any{}, "key", string(b))...)
	evs2.waitTag(t, "salt/job/"+mget(t, got, "load", "jid").(string)+"/ret/"+labMinion)
}

func tcpAddrURL(s *Master) string { return s.eventTCPAddr() }

// TestFramings: both framings decode; the length prefix counts the map only.
func TestFramings(t *testing.T) {
	for _, f := range []Framing{FramingBare, FramingLengthPrefixed} {
		t.Run(f.String(), func(t *testing.T) {
			s := startLab(t, WithEventFraming(f), withEventTCP())
			for _, addr := range []string{s.EventsAddr(), s.eventTCPAddr()} {
				evs := dialEvents(t, addr)
				waitReaders(t, s, 1)
				_ = s.FireEvent("t/1", map[string]any{"k": "v"})
				b, err := evs.r.Peek(1)
				if err != nil {
					t.Fatal(err)
				}
				if (b[0] == 0x82) != (f == FramingBare) {
					t.Errorf("%s first byte %x", addr, b[0])
				}
				if ev := evs.waitTag(t, "t/1"); mget(t, ev.data, "k") != "v" {
					t.Errorf("data %s", shape(ev.data, ""))
				}
				_ = evs.c.Close()
				waitSim(t, s, "the closed reader still counted", func() bool { return s.EventReaders() == 0 })
			}
		})
	}
}

// TestSubscribeThenFireImmediately: an event fired right after a reader's connect() returned
// reaches it (the accept race is settled before publishing).
func TestSubscribeThenFireImmediately(t *testing.T) {
	s := startLab(t)
	for i := 0; i < 50; i++ {
		evs := dialEvents(t, s.EventsAddr())
		if err := s.FireEvent("race/"+strconv.Itoa(i), map[string]any{}); err != nil {
			t.Fatal(err)
		}
		if ev, err := evs.next(2 * time.Second); err != nil || ev.tag != "race/"+strconv.Itoa(i) {
			t.Fatalf("iteration %d: %v %v", i, ev.tag, err)
		}
		_ = evs.c.Close()
	}
}
