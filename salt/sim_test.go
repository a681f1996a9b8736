package salt_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/errors"

	"github.com/oduflow/oduflow-go/salt"
	"github.com/oduflow/oduflow-go/salt/salttest"
)

const simMinion = "client-5b2f8c1e-3c4d-4e5f-8a9b-0c1d2e3f4a5b"

type simEnv struct {
	sim    *salttest.Master
	stream *salt.EventStream
	key    *salt.Client
	jids   *salt.JIDGenerator
}

func startSim(t testing.TB, opts ...salttest.Option) *simEnv {
	t.Helper()
	dir, err := os.MkdirTemp("", "ss") // unix socket paths must stay short
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	opts = append([]salttest.Option{salttest.WithDir(dir),
		salttest.WithEauthUser("file", "oduflow", "labpass-0duflow", salttest.LabACL())}, opts...)
	ctx := context.Background()
	sim, err := salttest.Start(ctx, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sim.Close() })
	sim.AddMinion(simMinion, nil)
	stream, err := salt.SubscribeEvents(ctx, sim.EventsAddr(), salt.WithTagPrefixes("salt/"),
		salt.WithReconnectBackoff(10*time.Millisecond, 100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = stream.Close() })
	key, err := salt.NewClient(sim.Addr(), salt.WithAuth(salt.UserKey("root", sim.KeyFile())),
		salt.WithRequestTimeout(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = key.Close() })
	return &simEnv{sim: sim, stream: stream, key: key, jids: salt.NewJIDGenerator()}
}

func (e *simEnv) ping(t testing.TB, c *salt.Client) (salt.JID, error) {
	t.Helper()
	jid := e.jids.Next()
	res, err := c.Publish(context.Background(), salt.PublishRequest{Target: salt.ListTarget(simMinion), Fun: "test.ping", JID: jid})
	if err == nil && (res.JID != jid || len(res.Minions) != 1) {
		t.Fatalf("publish result %+v", res)
	}
	return jid, err
}

func TestSimulatorEveryCommand(t *testing.T) {
	t.Parallel()
	for _, framing := range []salttest.Framing{salttest.FramingBare, salttest.FramingLengthPrefixed} {
		t.Run(framing.String(), func(t *testing.T) {
			e := startSim(t, salttest.WithEventFraming(framing))
			ctx := context.Background()
			if err := e.key.Ping(ctx); err != nil {
				t.Fatal(err)
			}
			tokens := salt.NewTokenSource(e.key, "file", "oduflow", "labpass-0duflow")
			for _, a := range []salt.Auth{salt.UserKey("root", e.sim.KeyFile()),
				salt.Eauth("file", "oduflow", "labpass-0duflow"), salt.TokenAuth(tokens)} {
				c, _ := salt.NewClient(e.sim.Addr(), salt.WithAuth(a))
				jid, err := e.ping(t, c)
				if err != nil {
					t.Fatal(err)
				}
				if r := waitReturn(t, e.stream, jid, simMinion); r.Return != true || !r.Success {
					t.Fatalf("return %+v", r)
				}
				_ = c.Close()
			}
			if tk, err := e.key.GetToken(ctx, tokens.Current().Token); err != nil || tk.Name != "oduflow" {
				t.Fatalf("get_token %v %v", tk, err)
			}
			if _, err := e.key.MkToken(ctx, "file", "oduflow", "nope"); !errors.Is(err, salt.ErrAuthentication) {
				t.Fatalf("mk_token: %v", err)
			}
			tc, _ := salt.NewClient(e.sim.Addr(), salt.WithAuth(salt.TokenAuth(tokens)))
			defer tc.Close()
			run, err := tc.Runner(ctx, "test.arg", []any{"a"}, map[string]any{"k": "v"})
			if err != nil {
				t.Fatal(err)
			}
			waitEvent(t, e.stream, 5*time.Second, "runner ret", func(ev salt.Event) bool { return ev.Tag == run.Tag+"/ret" })
			if w, err := tc.Wheel(ctx, "key.list_all", nil); err != nil || !w.Success {
				t.Fatalf("wheel %+v %v", w, err)
			}
			_, err = tc.Publish(ctx, salt.PublishRequest{Target: salt.ListTarget(simMinion), Fun: "cmd.run", Args: []any{"id"}})
			if !errors.Is(err, salt.ErrAuthorization) || !salt.IsNotPublished(err) {
				t.Fatalf("authz %v", err)
			}
			wrong, _ := salt.NewClient(e.sim.Addr(), salt.WithAuth(salt.Eauth("file", "oduflow", "bad")))
			defer wrong.Close()
			if _, err := e.ping(t, wrong); !errors.Is(err, salt.ErrAuthentication) {
				t.Fatalf("wrong password %v", err)
			}
			_, err = e.key.Publish(ctx, salt.PublishRequest{Target: salt.GlobTarget("nomatch-*"), Fun: "test.ping"})
			if !errors.Is(err, salt.ErrNoMinions) {
				t.Fatalf("no minions %v", err)
			}
			res, err := e.key.Publish(ctx, salt.PublishRequest{Target: salt.ListTarget(simMinion, "client-00000000-0000-4000-8000-000000000000"),
				Fun: "state.apply", Args: []any{"roles.client_stack"}, Kwargs: map[string]any{"test": true}, JID: e.jids.Next()})
			if err != nil || len(res.Missing) != 1 {
				t.Fatalf("partly unknown %+v %v", res, err)
			}
			r := waitReturn(t, e.stream, res.JID, simMinion)
			if len(r.FunArgs) != 2 || r.Retcode != 0 {
				t.Fatalf("state.apply return %+v", r)
			}
			if n := e.sim.PublicationCount("test.ping", ""); n != 3 {
				t.Fatalf("%d test.ping publications", n)
			}
		})
	}
}

func TestSimulatorDroppedReplyIsUnknownAndPublishedOnce(t *testing.T) {
	t.Parallel()
	e := startSim(t)
	c, _ := salt.NewClient(e.sim.Addr(), salt.WithAuth(salt.UserKey("root", e.sim.KeyFile())),
		salt.WithRequestTimeout(500*time.Millisecond))
	defer c.Close()
	e.sim.DropNextReply("publish")
	jid, err := e.ping(t, c)
	if !salt.IsOutcomeUnknown(err) || salt.IsNotPublished(err) {
		t.Fatalf("dropped reply: %v", err)
	}
	// the job did run: its return arrives, and it was published exactly once
	// (Publish has returned: a retry of its own, had it made one, is counted already)
	waitReturn(t, e.stream, jid, simMinion)
	if n := e.sim.PublicationCount("test.ping", ""); n != 1 {
		t.Fatalf("%d publications, want exactly 1", n)
	}
}

func TestSimulatorDelayedMalformedHeartbeat(t *testing.T) {
	t.Parallel()
	e := startSim(t, salttest.WithHeartbeat(20*time.Millisecond))
	c, _ := salt.NewClient(e.sim.Addr(), salt.WithAuth(salt.UserKey("root", e.sim.KeyFile())),
		salt.WithRequestTimeout(time.Second))
	defer c.Close()
	// delayed reply within the timeout, with PINGs every 20 ms meanwhile
	e.sim.DelayNextReply("publish", 300*time.Millisecond)
	if _, err := e.ping(t, c); err != nil {
		t.Fatalf("delayed reply with heartbeats: %v", err)
	}
	// explicit heartbeat while waiting
	e.sim.DelayNextReply("publish", 200*time.Millisecond)
	before := e.sim.PublicationCount("test.ping", "")
	done := make(chan error, 1)
	go func() { _, err := e.ping(t, c); done <- err }()
	// the publication is recorded before its delayed reply: the PING goes out while the reply is awaited
	if err := e.sim.WaitUntil(t.Context(), func() bool { return e.sim.PublicationCount("test.ping", "") > before }); err != nil {
		t.Fatal(err)
	}
	e.sim.SendHeartbeat()
	if err := <-done; err != nil {
		t.Fatalf("reply after explicit PING: %v", err)
	}
	// delayed beyond the timeout: unknown, but published once
	e.sim.DelayNextReply("publish", 1500*time.Millisecond)
	before = e.sim.PublicationCount("test.ping", "")
	if _, err := e.ping(t, c); !salt.IsOutcomeUnknown(err) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("late reply: %v", err)
	}
	// the publication went out before its late reply; the client, given up, publishes nothing more
	if n := e.sim.PublicationCount("test.ping", "") - before; n != 1 {
		t.Fatalf("%d publications", n)
	}
	// malformed reply
	e.sim.MalformNextReply("publish")
	if _, err := e.ping(t, c); !errors.Is(err, salt.ErrMalformedReply) || !salt.IsOutcomeUnknown(err) {
		t.Fatalf("malformed: %v", err)
	}
}

func TestSimulatorEventBusCloseAndRestart(t *testing.T) {
	t.Parallel()
	e := startSim(t, salttest.WithEventFraming(salttest.FramingLengthPrefixed))
	syncBus(t, e)
	e.sim.CloseEventBus()
	waitGap(t, e.stream, salt.GapReasonReconnected)
	jid, err := e.ping(t, e.key)
	if err != nil {
		t.Fatal(err)
	}
	waitReturn(t, e.stream, jid, simMinion)

	// restart: key rotates (UserKey re-reads it), bus reconnects
	if err := e.sim.Restart(context.Background()); err != nil {
		t.Fatal(err)
	}
	waitGap(t, e.stream, salt.GapReasonReconnected)
	jid, err = e.ping(t, e.key)
	if err != nil {
		t.Fatalf("publish after restart: %v", err)
	}
	waitReturn(t, e.stream, jid, simMinion)

	// duplicate returns are delivered as such (consumers deduplicate)
	jid = e.jids.Next()
	e.sim.DuplicateNextReturn(string(jid))
	if _, err := e.key.Publish(context.Background(), salt.PublishRequest{Target: salt.ListTarget(simMinion), Fun: "test.ping", JID: jid}); err != nil {
		t.Fatal(err)
	}
	waitReturn(t, e.stream, jid, simMinion)
	waitReturn(t, e.stream, jid, simMinion)
}

func TestSimulatorMinimumAuthVersion(t *testing.T) {
	t.Parallel()
	e := startSim(t, salttest.WithMinimumAuthVersion(3))
	if err := e.key.Ping(context.Background()); err != nil {
		t.Fatalf("version 3: %v", err)
	}
	old, _ := salt.NewClient(e.sim.Addr(), salt.WithEnvelopeVersion(2), salt.WithAuth(salt.UserKey("root", e.sim.KeyFile())))
	defer old.Close()
	if _, err := e.ping(t, old); !errors.Is(err, salt.ErrBadLoad) || !salt.IsNotPublished(err) {
		t.Fatalf("version 2 on a 3006.17+ master: %v", err)
	}
}

// syncBus fires an event and waits for it: afterwards the simulator has
// certainly registered our reader (connect() returns before the server's accept).
func syncBus(t *testing.T, e *simEnv) {
	t.Helper()
	if err := e.sim.FireEvent("salt/test/sync", map[string]any{}); err != nil {
		t.Fatal(err)
	}
	waitEvent(t, e.stream, 5*time.Second, "sync event", func(ev salt.Event) bool { return ev.Tag == "salt/test/sync" })
}

func waitGap(t *testing.T, s *salt.EventStream, reason string) {
	t.Helper()
	deadline := time.After(5 * time.Second)
	for {
		select {
		case ev := <-s.Events():
			if ev.Kind() == salt.EventGap && strings.Contains(ev.Gap.Reason, reason) {
				return
			}
		case <-deadline:
			t.Fatalf("no gap %q", reason)
		}
	}
}
