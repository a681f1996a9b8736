package salt_test

// Every sentinel the package documents must be visible to the STANDARD library's errors.Is/As:
// a caller that imports "errors" (not cockroachdb's) and retries on anything that is not
// ErrOutcomeUnknown would otherwise resend a publish that went out. These checks use only the
// standard "errors" package and go through real code paths over real sockets: the in-repo master
// simulator, plain TCP and unix listeners, real files.

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/oduflow/oduflow-go/salt"
	"github.com/oduflow/oduflow-go/salt/salttest"
)

// stdPing publishes test.ping to the simulated minion with a preassigned JID.
func stdPing(e *simEnv, c *salt.Client) (*salt.PublishResult, error) {
	return c.Publish(context.Background(), salt.PublishRequest{Target: salt.ListTarget(simMinion), Fun: "test.ping", JID: e.jids.Next()})
}

func wantIs(t *testing.T, what string, err error, sentinels ...error) {
	t.Helper()
	wantOneLine(t, what, err)
	for _, s := range sentinels {
		if !errors.Is(err, s) {
			t.Errorf("%s: errors.Is(%v, %v) = false", what, err, s)
		}
	}
}

func wantNot(t *testing.T, what string, err error, sentinels ...error) {
	t.Helper()
	for _, s := range sentinels {
		if errors.Is(err, s) {
			t.Errorf("%s: errors.Is(%v, %v) = true", what, err, s)
		}
	}
}

func TestStdlibErrorsNotSent(t *testing.T) {
	t.Parallel()
	// a closed port: the dial is refused
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := "tcp://" + ln.Addr().String()
	_ = ln.Close()
	c, _ := salt.NewClient(addr, salt.WithAuth(salt.Eauth("file", "u", "p")), salt.WithRequestTimeout(2*time.Second))
	defer c.Close()
	_, err = c.Publish(context.Background(), salt.PublishRequest{Target: salt.ListTarget("m"), Fun: "test.ping"})
	wantIs(t, "refused dial", err, salt.ErrNotSent)
	wantNot(t, "refused dial", err, salt.ErrOutcomeUnknown)
	if !salt.IsNotPublished(err) {
		t.Errorf("refused dial: IsNotPublished false")
	}

	// a plain TCP listener that is not a ZMTP peer: accepts and hangs up
	pl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer pl.Close()
	go func() {
		for {
			nc, err := pl.Accept()
			if err != nil {
				return
			}
			_, _ = nc.Write([]byte("HTTP/1.0 400 Bad Request\r\n\r\n"))
			_ = nc.Close()
		}
	}()
	c2, _ := salt.NewClient("tcp://"+pl.Addr().String(), salt.WithAuth(salt.Eauth("file", "u", "p")), salt.WithRequestTimeout(2*time.Second))
	defer c2.Close()
	_, err = c2.Publish(context.Background(), salt.PublishRequest{Target: salt.ListTarget("m"), Fun: "test.ping"})
	wantIs(t, "not a ZMTP peer", err, salt.ErrNotSent)
	wantNot(t, "not a ZMTP peer", err, salt.ErrOutcomeUnknown)
}

func TestStdlibErrorsFromTheSimulator(t *testing.T) {
	t.Parallel()
	e := startSim(t, salttest.WithMinimumAuthVersion(3))
	ctx := context.Background()
	newClient := func(opts ...salt.ClientOption) *salt.Client {
		c, err := salt.NewClient(e.sim.Addr(), append([]salt.ClientOption{salt.WithRequestTimeout(3 * time.Second)}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	key := salt.WithAuth(salt.UserKey("root", e.sim.KeyFile()))

	t.Run("outcome unknown: reply dropped", func(t *testing.T) {
		e.sim.DropNextReply("publish")
		before := e.sim.PublicationCount("test.ping", "")
		_, err := stdPing(e, newClient(key, salt.WithRequestTimeout(500*time.Millisecond)))
		wantIs(t, "dropped reply", err, salt.ErrOutcomeUnknown, context.DeadlineExceeded)
		wantNot(t, "dropped reply", err, salt.ErrNotSent)
		if got := e.sim.PublicationCount("test.ping", "") - before; got != 1 {
			t.Errorf("published %d times, want 1", got)
		}
	})
	t.Run("authentication", func(t *testing.T) {
		_, err := stdPing(e, newClient(salt.WithAuth(salt.Eauth("file", "oduflow", "wrong"))))
		wantIs(t, "wrong password", err, salt.ErrAuthentication, salt.ErrMasterError)
		wantNot(t, "wrong password", err, salt.ErrOutcomeUnknown, salt.ErrNotSent, salt.ErrAuthorization)
		var me *salt.MasterError
		if !errors.As(err, &me) || me.Name == "" {
			t.Errorf("errors.As *MasterError: %v", err)
		}
	})
	t.Run("authorization", func(t *testing.T) {
		_, err := newClient(salt.WithAuth(salt.Eauth("file", "oduflow", "labpass-0duflow"))).Publish(ctx,
			salt.PublishRequest{Target: salt.ListTarget(simMinion), Fun: "cmd.run", Args: []any{"id"}})
		wantIs(t, "ACL", err, salt.ErrAuthorization, salt.ErrMasterError)
		wantNot(t, "ACL", err, salt.ErrAuthentication, salt.ErrOutcomeUnknown)
		var me *salt.MasterError
		if !errors.As(err, &me) || me.Name != "AuthorizationError" {
			t.Errorf("errors.As *MasterError: %v", err)
		}
	})
	t.Run("no minions", func(t *testing.T) {
		_, err := e.key.Publish(ctx, salt.PublishRequest{Target: salt.GlobTarget("nomatch-*"), Fun: "test.ping"})
		wantIs(t, "no minions", err, salt.ErrNoMinions)
		wantNot(t, "no minions", err, salt.ErrOutcomeUnknown)
		var nm *salt.NoMinionsError
		if !errors.As(err, &nm) {
			t.Errorf("errors.As *NoMinionsError: %v", err)
		}
	})
	t.Run("bad load", func(t *testing.T) {
		_, err := stdPing(e, newClient(key, salt.WithEnvelopeVersion(2)))
		wantIs(t, "version 2", err, salt.ErrBadLoad)
		wantNot(t, "version 2", err, salt.ErrOutcomeUnknown)
	})
	t.Run("master exception", func(t *testing.T) {
		e.sim.ExceptionNextReply("publish")
		_, err := stdPing(e, newClient(key))
		wantIs(t, "exception", err, salt.ErrMasterException)
		wantNot(t, "exception", err, salt.ErrOutcomeUnknown)
	})
	t.Run("reply too large", func(t *testing.T) {
		_, err := stdPing(e, newClient(key, salt.WithMaxReplyBytes(16)))
		wantIs(t, "reply cap", err, salt.ErrReplyTooLarge, salt.ErrOutcomeUnknown)
	})
	t.Run("reply over the decode budget", func(t *testing.T) {
		_, err := stdPing(e, newClient(key, salt.WithReplyDecodeLimits(salt.DecodeLimits{MaxElements: 3, MaxBytes: 1 << 20, MaxDepth: 8})))
		wantIs(t, "decode budget", err, salt.ErrDecodeBudget, salt.ErrMalformedReply, salt.ErrOutcomeUnknown, salt.ErrMsgpack)
	})
	t.Run("key file", func(t *testing.T) {
		p := filepath.Join(t.TempDir(), "shadow")
		if err := os.WriteFile(p, []byte("root:$6$salt$hash:19000:0:99999:7:::\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		before := len(e.sim.Publications())
		_, err := stdPing(e, newClient(salt.WithAuth(salt.UserKey("root", p))))
		wantIs(t, "not a key", err, salt.ErrKeyFile, salt.ErrNotSent)
		wantNot(t, "not a key", err, salt.ErrOutcomeUnknown)
		if len(e.sim.Publications()) != before {
			t.Error("a publish went out")
		}
	})
	t.Run("jid mismatch", func(t *testing.T) {
		e.sim.RewriteNextPublishReply(func(jid string, minions []string) (string, []string) {
			return "20200101000000000000", minions
		})
		before := e.sim.PublicationCount("test.ping", "")
		res, err := stdPing(e, e.key)
		wantIs(t, "jid mismatch", err, salt.ErrOutcomeUnknown)
		wantNot(t, "jid mismatch", err, salt.ErrNotSent, salt.ErrMalformedReply)
		var rm *salt.ReplyMismatchError
		if !errors.As(err, &rm) || rm.Field != "jid" || res != nil || salt.IsNotPublished(err) {
			t.Errorf("mismatch %+v %v %v", rm, res, err)
		}
		if e.sim.PublicationCount("test.ping", "")-before != 1 {
			t.Error("the rewritten publish was not published: the fault is not what the test thinks")
		}
	})
	t.Run("minions mismatch", func(t *testing.T) {
		for name, f := range map[string]func(string, []string) (string, []string){
			"extra minion": func(j string, m []string) (string, []string) { return j, append(m, "client-intruder") },
			"no minion":    func(j string, m []string) (string, []string) { return j, []string{} },
			"other minion": func(j string, m []string) (string, []string) { return j, []string{"client-other"} },
			"twice":        func(j string, m []string) (string, []string) { return j, append(m, m...) },
		} {
			e.sim.RewriteNextPublishReply(f)
			_, err := stdPing(e, e.key)
			wantIs(t, name, err, salt.ErrOutcomeUnknown)
			var rm *salt.ReplyMismatchError
			if !errors.As(err, &rm) || rm.Field != "minions" {
				t.Errorf("%s: %v", name, err)
			}
		}
		// a glob target is not an id list: its minions are the master's to say
		e.sim.RewriteNextPublishReply(func(j string, m []string) (string, []string) { return j, m })
		if _, err := e.key.Publish(ctx, salt.PublishRequest{Target: salt.GlobTarget("client-*"), Fun: "test.ping", JID: e.jids.Next()}); err != nil {
			t.Errorf("glob: %v", err)
		}
		// an unchanged acknowledgement passes, unknown ids reported as missing included
		res, err := e.key.Publish(ctx, salt.PublishRequest{Target: salt.ListTarget(simMinion, "client-unknown", simMinion),
			Fun: "test.ping", JID: e.jids.Next()})
		if err != nil || len(res.Missing) != 1 {
			t.Errorf("exact ack refused: %+v %v", res, err)
		}
	})
	t.Run("refusal before mismatch", func(t *testing.T) {
		// a refusal proves nothing was published, whatever JID it carries
		e.sim.ExceptionNextReply("publish")
		e.sim.RewriteNextPublishReply(func(j string, m []string) (string, []string) { return "20200101000000000000", nil })
		_, err := stdPing(e, e.key)
		wantIs(t, "exception", err, salt.ErrMasterException)
		wantNot(t, "exception", err, salt.ErrOutcomeUnknown)
		e.sim.RewriteNextPublishReply(func(j string, m []string) (string, []string) { return j, m }) // consume
		_, _ = stdPing(e, e.key)
	})
}

// TestStdlibErrorsEventFrames: the causes of event stream gaps are visible too.
func TestStdlibErrorsEventFrames(t *testing.T) {
	t.Parallel()
	frame := mustEventFrame(t, "salt/test/big", 600)
	for name, tc := range map[string]struct {
		opts []salt.EventOption
		send []byte
		want error
	}{
		"length prefix over the cap": {[]salt.EventOption{salt.WithMaxFrameBytes(512)},
			binary.BigEndian.AppendUint32(nil, 1<<30), salt.ErrFrameTooLarge},
		"bare frame over the cap": {[]salt.EventOption{salt.WithMaxFrameBytes(512)}, frame, salt.ErrFrameTooLarge},
		"decode budget": {[]salt.EventOption{salt.WithEventDecodeLimits(salt.DecodeLimits{MaxElements: 2, MaxBytes: 1 << 20, MaxDepth: 8})},
			frame, salt.ErrDecodeBudget},
		"half a frame": {[]salt.EventOption{salt.WithFrameTimeout(200 * time.Millisecond)}, frame[:len(frame)/2], salt.ErrFrameTimeout},
	} {
		t.Run(name, func(t *testing.T) {
			addr := serveEventBytes(t, tc.send)
			s, err := salt.SubscribeEvents(context.Background(), addr,
				append([]salt.EventOption{salt.WithReconnectBackoff(time.Hour, time.Hour)}, tc.opts...)...)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			select {
			case ev := <-s.Events():
				if ev.Kind() != salt.EventGap || !errors.Is(ev.Gap.Err, tc.want) {
					t.Fatalf("got %v %+v, want a gap caused by %v", ev.Kind(), ev.Gap, tc.want)
				}
				wantOneLine(t, name, ev.Gap.Err)
			case <-time.After(5 * time.Second):
				t.Fatal("no gap")
			}
		})
	}
}

// wantOneLine fails unless err renders as one short line in slog's text and JSON handlers
// (slog.Any("err", err); the text handler formats with %+v, where cockroachdb prints its stack traces)
// and through %+v: no stack, no source path, no second line.
func wantOneLine(t *testing.T, what string, err error) {
	t.Helper()
	if err == nil {
		t.Errorf("%s: no error to render", what)
		return
	}
	var text, js bytes.Buffer
	slog.New(slog.NewTextHandler(&text, nil)).Error("failed", slog.Any("err", err))
	slog.New(slog.NewJSONHandler(&js, nil)).Error("failed", slog.Any("err", err))
	for name, out := range map[string]string{"slog text": text.String(), "slog json": js.String(),
		"%+v": fmt.Sprintf("%+v", err) + "\n"} {
		if strings.Count(out, "\n") != 1 || strings.Contains(out, ".go:") || strings.Contains(out, "stack trace") ||
			strings.Contains(out, "goroutine") || len(out) > 1500 {
			t.Errorf("%s: %s renders %d lines, %d bytes:\n%s", what, name, strings.Count(out, "\n"), len(out), out)
		}
	}
}

// The sentinels refused before any I/O, and a closed client, render as one line too.
func TestErrorsRenderOneLineLocal(t *testing.T) {
	t.Parallel()
	_, err := salt.ParseJID("2026-11-29")
	wantIs(t, "ParseJID", err, salt.ErrInvalidJID)
	_, err = salt.NewClient("http://127.0.0.1:4506")
	wantIs(t, "NewClient bad address", err, salt.ErrInvalidRequest)
	c, err := salt.NewClient("tcp://127.0.0.1:1", salt.WithAuth(salt.Eauth("file", "u", "p")))
	if err != nil {
		t.Fatal(err)
	}
	_ = c.Close()
	err = c.Ping(context.Background())
	wantIs(t, "closed client", err, salt.ErrClosed, salt.ErrNotSent)
	_, err = salt.SubscribeEvents(context.Background(), "http://x")
	wantIs(t, "SubscribeEvents bad address", err, salt.ErrInvalidRequest)
}
