package salt

import (
	"bytes"
	"context"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/oduflow/oduflow-go/internal/testwait"
)

const testMinion = "client-5b2f8c1e-3c4d-4e5f-8a9b-0c1d2e3f4a5b"

func writeKey(t testing.TB, key string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), ".root_key")
	if err := os.WriteFile(p, []byte(key), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func fakeMaster(t *testing.T, key string) (string, *[]map[string]any) {
	var seen []map[string]any
	var mu sync.Mutex
	addr := startZmqRouter(t, func(env map[string]any) any {
		load := env["load"].(map[string]any)
		mu.Lock()
		seen = append(seen, env)
		mu.Unlock()
		if env["version"] != int64(3) || env["enc"] != "clear" {
			return "bad load"
		}
		switch load["cmd"] {
		case "ping":
			return load
		case "publish":
			kw, _ := load["kwargs"].(map[string]any)
			if load["key"] != key && (kw == nil || kw["token"] != "tok") {
				return map[string]any{"error": map[string]any{"name": "AuthenticationError", "message": "Authentication error occurred."}}
			}
			if load["fun"] == "cmd.run" {
				return map[string]any{"error": map[string]any{"name": "AuthorizationError", "message": "Authorization error occurred."}}
			}
			if load["tgt_type"] == "glob" {
				return map[string]any{"enc": "clear", "load": map[string]any{"jid": nil, "minions": []any{}, "error": "Master could not resolve minions for target x"}}
			}
			jid := load["jid"]
			if jid == "" {
				jid = "20261129154606099999"
			}
			return map[string]any{"enc": "clear", "load": map[string]any{"jid": jid, "minions": load["tgt"], "missing": []any{}}}
		case "runner":
			return map[string]any{"tag": "salt/run/20261129154611235549", "jid": "20261129154611235549"}
		case "wheel":
			return map[string]any{"tag": "salt/wheel/20261129154613853869", "data": map[string]any{
				"jid": "20261129154613853869", "success": true, "return": map[string]any{"minions": []any{testMinion}}}}
		case "mk_token":
			if load["password"] != "pw" {
				return ""
			}
			now := float64(time.Now().Unix())
			return map[string]any{"token": "tok", "name": load["username"], "eauth": load["eauth"], "start": now, "expire": now + 43200}
		case "get_token":
			if load["token"] != "tok" {
				return map[string]any{}
			}
			return map[string]any{"token": "tok", "name": "u", "eauth": "file", "start": 1.0, "expire": 2.0}
		}
		return map[string]any{}
	})
	return addr, &seen
}

func TestClientCommandsAgainstZmq4Router(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	addr, seen := fakeMaster(t, testUserKey("KEY"))
	keyFile := writeKey(t, testUserKey("KEY"))
	c, err := NewClient(addr, WithAuth(UserKey("root", keyFile)), WithRequestTimeout(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	jid := NewJIDGenerator().Next()
	res, err := c.Publish(ctx, PublishRequest{Target: ListTarget(testMinion), Fun: "state.apply",
		Args: []any{"roles.client_stack"}, Kwargs: map[string]any{"test": true}, JID: jid,
		Metadata: map[string]any{"request_id": "r1"}})
	if err != nil || res.JID != jid || len(res.Minions) != 1 {
		t.Fatalf("publish %+v %v", res, err)
	}
	load := (*seen)[len(*seen)-1]["load"].(map[string]any)
	args := load["arg"].([]any)
	if kw := args[1].(map[string]any); kw["__kwarg__"] != true || kw["test"] != true {
		t.Fatalf("kwarg map %v", args)
	}
	if load["kwargs"].(map[string]any)["metadata"].(map[string]any)["request_id"] != "r1" || load["user"] != "root" {
		t.Fatalf("load %v", load)
	}
	_, err = c.Publish(ctx, PublishRequest{Target: GlobTarget("x*"), Fun: "test.ping"})
	var nm *noMinionsError
	if !errors.Is(err, ErrNoMinions) || !errors.As(err, &nm) || !IsNotPublished(err) {
		t.Fatalf("no minions: %v", err)
	}
	_, err = c.Publish(ctx, PublishRequest{Target: Target{Type: "compound", Expr: "G@os:Debian and web*"}, Fun: "cmd.run"})
	if !errors.Is(err, ErrAuthorization) || !IsNotPublished(err) || IsOutcomeUnknown(err) {
		t.Fatalf("authz: %v", err)
	}
	if r, err := c.Runner(ctx, "test.arg", []any{"a"}, nil); err != nil || r.JID == "" {
		t.Fatalf("runner %v %v", r, err)
	}
	if w, err := c.Wheel(ctx, "key.list_all", nil); err != nil || !w.Success || w.JID == "" {
		t.Fatalf("wheel %v %v", w, err)
	}
	if _, ok := (*seen)[len(*seen)-1]["load"].(map[string]any)["user"]; ok {
		t.Fatal("wheel with user key must not send user")
	}
	// wrong key: authentication error, key re-read per request
	if err := os.WriteFile(keyFile, []byte(testUserKey("ROTATED")), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = c.Publish(ctx, PublishRequest{Target: ListTarget(testMinion), Fun: "test.ping"})
	if !errors.Is(err, ErrAuthentication) || !IsNotPublished(err) {
		t.Fatalf("rotated key: %v", err)
	}

	// tokens
	if _, err := c.MkToken(ctx, "file", "u", "bad"); !errors.Is(err, ErrAuthentication) {
		t.Fatalf("mk_token bad: %v", err)
	}
	src := NewTokenSource(c, "file", "u", "pw")
	tc, _ := NewClient(addr, WithAuth(TokenAuth(src)))
	if _, err := tc.Publish(ctx, PublishRequest{Target: ListTarget(testMinion), Fun: "test.ping"}); err != nil {
		t.Fatal(err)
	}
	if kw := (*seen)[len(*seen)-1]["load"].(map[string]any)["kwargs"].(map[string]any); kw["token"] != "tok" || len(kw) != 1 {
		t.Fatalf("token kwargs %v", kw)
	}
	if tk, err := c.GetToken(ctx, "tok"); err != nil || tk.Name != "u" {
		t.Fatalf("get_token %v %v", tk, err)
	}
	if _, err := c.GetToken(ctx, "nope"); !errors.Is(err, ErrAuthentication) {
		t.Fatalf("get_token unknown: %v", err)
	}
}

// TestWireGoldenLocalClient replays the master's side of a captured
// connection and checks that the client's bytes (greeting, READY, request)
// equal what Salt's LocalClient sent, byte for byte.
func TestWireGoldenLocalClient(t *testing.T) {
	t.Parallel()
	s2c := readVector(t, "wire/zmtp_req_publish.s2c.raw")
	c2s := readVector(t, "wire/zmtp_req_publish.c2s.raw")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	got := make(chan []byte, 1)
	go func() {
		nc, err := ln.Accept()
		if err != nil {
			got <- nil
			return
		}
		defer nc.Close()
		_ = nc.SetDeadline(time.Now().Add(5 * time.Second))
		_, _ = nc.Write(s2c)
		b := make([]byte, len(c2s))
		_, _ = io.ReadFull(nc, b)
		got <- b
	}()
	load := capturedLoad(t, "01_publish_rootkey_list_test_ping")
	c, _ := NewClient("tcp://"+ln.Addr().String(), WithEnvelopeVersion(2),
		WithAuth(UserKey("root", writeKey(t, load["key"].(string)))))
	res, err := c.Publish(context.Background(), PublishRequest{Target: ListTarget(testMinion), Fun: "test.ping",
		JID: JID(load["jid"].(string)), Timeout: 5})
	if err != nil || string(res.JID) != load["jid"] {
		t.Fatalf("publish: %+v %v", res, err)
	}
	if b := <-got; !bytes.Equal(b, c2s) {
		t.Fatalf("client stream differs\n got %x\nwant %x", b, c2s)
	}
}

func okReply(t *testing.T, jid string) []byte {
	b, err := encodeSalt(newOrderedMap().Set("enc", "clear").Set("load",
		newOrderedMap().Set("jid", jid).Set("minions", []string{testMinion}).Set("missing", []string{})))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func publishOnce(t *testing.T, addr string, opts ...ClientOption) (*PublishResult, error) {
	t.Helper()
	opts = append([]ClientOption{WithAuth(UserKey("root", writeKey(t, testUserKey("K"))))}, opts...)
	c, err := NewClient(addr, opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	return c.Publish(context.Background(), PublishRequest{Target: ListTarget(testMinion), Fun: "test.ping",
		JID: "20261129154606042846"})
}

func TestPingHeartbeatIsNotAReply(t *testing.T) {
	t.Parallel()
	pong := make(chan string, 1)
	_, addr := startRawRouter(t, func(c *rawConn, req []byte) {
		if err := c.ping([]byte("ctx1")); err != nil {
			return
		}
		p, err := c.request() // the client's PONG
		if err != nil {
			pong <- err.Error()
			return
		}
		pong <- string(p)
		_ = c.ping(nil)
		_ = c.reply(okReply(t, "20261129154606042846"))
	})
	res, err := publishOnce(t, addr)
	if err != nil || res.JID != "20261129154606042846" {
		t.Fatalf("publish after PING: %+v %v", res, err)
	}
	if p := <-pong; p != "PONG" {
		t.Fatalf("expected PONG, got %q", p)
	}
}

func TestPublishFaults(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		handle  func(c *rawConn, req []byte)
		opts    []ClientOption
		is      []error
		notPub  bool
		unknown bool
	}{
		{"dropped reply", func(c *rawConn, req []byte) {}, nil, []error{ErrOutcomeUnknown}, false, true},
		{"only heartbeats then timeout", func(c *rawConn, req []byte) {
			for i := 0; i < 5; i++ {
				_ = c.ping(nil)
				// the fake master's heartbeat cadence: its behaviour, not an ordering
				time.Sleep(50 * time.Millisecond)
			}
			// the fake master then stays silent beyond the request timeout: the behaviour under test
			time.Sleep(time.Second)
		}, []ClientOption{WithRequestTimeout(400 * time.Millisecond)}, []error{ErrOutcomeUnknown, context.DeadlineExceeded}, false, true},
		{"malformed reply", func(c *rawConn, req []byte) { _ = c.reply([]byte{0xc1, 0x00}) }, nil,
			[]error{ErrMalformedReply, ErrOutcomeUnknown}, false, true},
		{"reply too large", func(c *rawConn, req []byte) { _ = c.reply(bytes.Repeat([]byte{0xc0}, 5000)) },
			[]ClientOption{WithMaxReplyBytes(1000)}, []error{errReplyTooLarge, ErrOutcomeUnknown}, false, true},
		{"bad load", func(c *rawConn, req []byte) { _ = c.reply([]byte("\xa8bad load")) }, nil, []error{ErrBadLoad}, true, false},
		{"master exception", func(c *rawConn, req []byte) {
			b, _ := encodeSalt("Some exception handling minion payload")
			_ = c.reply(b)
		}, nil, []error{ErrMasterException}, true, false},
		{"reply not a delimiter message", func(c *rawConn, req []byte) {
			_, _ = c.nc.Write(zmtpFrame(0, okReply(t, "20261129154606042846")))
		}, nil, []error{ErrOutcomeUnknown}, false, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r, addr := startRawRouter(t, tc.handle)
			_, err := publishOnce(t, addr, tc.opts...)
			for _, want := range tc.is {
				if !errors.Is(err, want) {
					t.Fatalf("err %v is not %v", err, want)
				}
			}
			if IsNotPublished(err) != tc.notPub || IsOutcomeUnknown(err) != tc.unknown {
				t.Fatalf("err %v: notPublished=%v unknown=%v", err, IsNotPublished(err), IsOutcomeUnknown(err))
			}
			if n := r.requests.Load(); n != 1 {
				t.Fatalf("server saw %d requests, want exactly 1 (never retried)", n)
			}
		})
	}
}

func TestNotSent(t *testing.T) {
	t.Parallel()
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	closed := "tcp://" + ln.Addr().String()
	_ = ln.Close()
	_, err := publishOnce(t, closed)
	if !errors.Is(err, ErrNotSent) || !IsNotPublished(err) || IsOutcomeUnknown(err) {
		t.Fatalf("refused: %v", err)
	}
	// a peer that is not ZMTP
	ln2, _ := net.Listen("tcp", "127.0.0.1:0")
	defer ln2.Close()
	go func() {
		nc, err := ln2.Accept()
		if err == nil {
			_, _ = nc.Write([]byte(strings.Repeat("HTTP/1.1 400 Bad Request\r\n", 4)))
			_ = nc.SetReadDeadline(time.Now().Add(5 * time.Second))
			_, _ = io.Copy(io.Discard, nc) // until the client gives up on the garbage and hangs up
			nc.Close()
		}
	}()
	_, err = publishOnce(t, "tcp://"+ln2.Addr().String())
	if !errors.Is(err, ErrNotSent) {
		t.Fatalf("non-ZMTP peer: %v", err)
	}
	// missing key file: nothing sent
	c, _ := NewClient(closed, WithAuth(UserKey("root", filepath.Join(t.TempDir(), "nope"))))
	_, err = c.Publish(context.Background(), PublishRequest{Target: ListTarget("m"), Fun: "test.ping"})
	if !errors.Is(err, ErrNotSent) || !errors.Is(err, ErrKeyFile) {
		t.Fatalf("missing key: %v", err)
	}
	// invalid requests are refused before any I/O
	for _, req := range []PublishRequest{{Fun: "test.ping"}, {Target: ListTarget("m")},
		{Target: ListTarget("m"), Fun: "f", JID: "123"}, {Target: GlobTarget(""), Fun: "f"}} {
		if _, err := c.Publish(context.Background(), req); !errors.Is(err, ErrNotSent) {
			t.Fatalf("invalid %+v: %v", req, err)
		}
	}
	if _, err := NewClient("http://x"); !errors.Is(err, ErrInvalidRequest) {
		t.Fatal(err)
	}
}

func TestContextCancelClosesSocket(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	r, addr := startRawRouter(t, func(c *rawConn, req []byte) { <-release })
	defer close(release)
	c, _ := NewClient(addr, WithAuth(UserKey("root", writeKey(t, testUserKey("K")))))
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := c.Publish(ctx, PublishRequest{Target: ListTarget("m"), Fun: "test.ping"})
		errc <- err
	}()
	testwait.Until(t, "the request never reached the router", 5*time.Second, func() bool { return r.requests.Load() > 0 })
	start := time.Now()
	cancel()
	err := <-errc
	if !IsOutcomeUnknown(err) || !errors.Is(err, context.Canceled) || time.Since(start) > time.Second {
		t.Fatalf("cancel: %v after %s", err, time.Since(start))
	}
	// Close aborts in-flight requests too, and refuses new ones
	go func() {
		_, err := c.Publish(context.Background(), PublishRequest{Target: ListTarget("m"), Fun: "test.ping"})
		errc <- err
	}()
	testwait.Until(t, "the second request never reached the router", 5*time.Second,
		func() bool { return r.requests.Load() >= 2 })
	_ = c.Close()
	if err := <-errc; !IsOutcomeUnknown(err) {
		t.Fatalf("close in flight: %v", err)
	}
	if err := c.Ping(context.Background()); !errors.Is(err, ErrClosed) || !errors.Is(err, ErrNotSent) {
		t.Fatalf("after close: %v", err)
	}
}
