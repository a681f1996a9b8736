package salttest

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"
)

func TestPingEcho(t *testing.T) {
	s := startLab(t)
	got := call(t, s, "cmd", "ping", "probe", "x", "nonce", "0123")
	if shape(got, "") != `{"cmd":"ping","probe":"x"}` {
		t.Errorf("ping reply %s (nonce must be dropped for version > 1)", shape(got, ""))
	}
}

func TestPublishByKeyRunsMinionAndFiresEvents(t *testing.T) {
	s := startLab(t)
	evs := dialEvents(t, s.EventsAddr())
	waitReaders(t, s, 1)
	jid := "20261129170000000001"
	md := newOmap("request_id", "r-1")
	got := call(t, s, publishLoad("state.apply", []any{labMinion, labGhost}, "list",
		[]any{"roles.client_production"}, "jid", jid, "kwargs", newOmap("metadata", md))...)
	if g := shape(got, ""); g != `{"enc":"clear","load":{"jid":<string>,"minions":["`+labMinion+`"],"missing":["`+labGhost+`"]}}` {
		t.Fatalf("reply %s", g)
	}
	if mget(t, got, "load", "jid") != jid {
		t.Errorf("preassigned jid not used")
	}
	ev := evs.waitTag(t, jid)
	if shape(ev.data, "") != `{"minions":["`+labMinion+`"],"_stamp":<string>}` {
		t.Errorf("legacy event %s", shape(ev.data, ""))
	}
	evs.waitTag(t, "salt/job/"+jid+"/new")
	ret := evs.waitTag(t, "salt/job/"+jid+"/ret/"+labMinion)
	if mget(t, ret.data, "retcode") != int64(2) || mget(t, ret.data, "success") != false ||
		mget(t, ret.data, "out") != "highstate" || mget(t, ret.data, "metadata", "request_id") != "r-1" {
		t.Errorf("ret event %s", shape(ret.data, ""))
	}
	pubs := s.Publications()
	if len(pubs) != 1 || pubs[0].JID != jid || pubs[0].User != "root" || pubs[0].Metadata["request_id"] != "r-1" ||
		len(pubs[0].Target) != 1 || len(pubs[0].Missing) != 1 {
		t.Errorf("publications %+v", pubs)
	}
}

func TestPublishTargets(t *testing.T) {
	s := startLab(t)
	s.AddMinion("client-b", nil)
	s.AddMinion("web1", nil)
	cases := []struct {
		tgt     any
		typ     string
		minions string
	}{
		{"client-*", "glob", `["` + labMinion + `","client-b"]`},
		{"client-[!5]", "glob", `["client-b"]`},
		{"web?", "glob", `["web1"]`},
		{"^web", "pcre", `["web1"]`},
		{"client-* and not client-b", "compound", `["` + labMinion + `"]`},
		{"web1 or client-b", "compound", `["client-b","web1"]`},
		{"L@web1,nothere or ( E@^client-b$ )", "compound", `["client-b","web1"]`},
		{"G@os:Debian", "compound", `[]`},
		{"web1,client-b", "list", `["web1","client-b"]`},
	}
	for _, c := range cases {
		got := call(t, s, publishLoad("test.ping", c.tgt, c.typ, []any{})...)
		if g := shape(mget(t, got, "load", "minions"), ""); g != c.minions {
			t.Errorf("%v %s: minions %s, want %s", c.tgt, c.typ, g, c.minions)
		}
	}
	got := call(t, s, publishLoad("test.ping", []any{labGhost}, "list", []any{})...)
	want := `{"enc":"clear","load":{"jid":<<nil>>,"minions":[],"error":"Master could not resolve minions for target ['` +
		labGhost + `']"}}`
	if shape(got, "") != want {
		t.Errorf("no minions reply %s", shape(got, ""))
	}
}

func TestPublishAuth(t *testing.T) {
	s := startLab(t)
	evs := dialEvents(t, s.EventsAddr())
	waitReaders(t, s, 1)
	authErr := `{"error":{"name":"AuthenticationError","message":"Authentication error occurred."}}`
	authzErr := `{"error":{"name":"AuthorizationError","message":"Authorization error occurred."}}`

	// wrong root key -> AuthenticationError + salt/job/<jid>/error without the key
	got := call(t, s, publishLoad("test.ping", []any{labMinion}, "list", []any{}, "key", "nope",
		"jid", "20261129170000000002")...)
	if shape(got, "") != authErr {
		t.Errorf("bad key: %s", shape(got, ""))
	}
	ev := evs.waitTag(t, "salt/job/20261129170000000002/error")
	if ev.data.Has("key") || !ev.data.Has("error") {
		t.Errorf("error event %s", shape(ev.data, ""))
	}
	// eauth wrong password -> AuthenticationError; the password is on the bus, like Salt
	got = call(t, s, publishLoad("test.ping", []any{labMinion}, "list", []any{}, "key", "",
		"kwargs", newOmap("eauth", "file", "username", labUser, "password", "WRONG"))...)
	if shape(got, "") != authErr {
		t.Errorf("bad password: %s", shape(got, ""))
	}
	ev = evs.waitTag(t, "salt/job/error")
	if mget(t, ev.data, "kwargs", "password") != "WRONG" {
		t.Errorf("error event %s", shape(ev.data, ""))
	}
	// function outside the ACL -> AuthorizationError
	got = call(t, s, publishLoad("cmd.run", []any{labMinion}, "list", []any{"id"}, "key", "",
		"kwargs", newOmap("eauth", "file", "username", labUser, "password", labPassword))...)
	if shape(got, "") != authzErr {
		t.Errorf("unauthorized: %s", shape(got, ""))
	}
	// minion outside the ACL target -> AuthorizationError; find_job is always allowed
	s.AddMinion("web1", nil)
	got = call(t, s, publishLoad("test.ping", []any{"web1"}, "list", []any{}, "key", "",
		"kwargs", newOmap("eauth", "auto", "username", labUser, "password", "x"))...)
	if shape(got, "") != authzErr {
		t.Errorf("target outside ACL: %s", shape(got, ""))
	}
	got = call(t, s, publishLoad("saltutil.find_job", []any{"web1"}, "list", []any{"1"}, "key", "",
		"kwargs", newOmap("eauth", "auto", "username", labUser, "password", "x"))...)
	if _, ok := mget(t, got, "load", "jid").(string); !ok {
		t.Errorf("find_job: %s", shape(got, ""))
	}
	// eauth success rewrites user
	got = call(t, s, publishLoad("test.ping", []any{labMinion}, "list", []any{}, "key", "",
		"kwargs", newOmap("eauth", "file", "username", labUser, "password", labPassword))...)
	jid := mget(t, got, "load", "jid").(string)
	if p := s.Publications(); p[len(p)-1].JID != jid || p[len(p)-1].User != labUser {
		t.Errorf("eauth publication %+v", p[len(p)-1])
	}
	// blacklist
	s2 := startLab(t, withBlacklist(nil, []string{`cmd\.`}))
	got = call(t, s2, publishLoad("cmd.run", []any{labMinion}, "list", []any{})...)
	if shape(got, "") != authzErr {
		t.Errorf("blacklisted: %s", shape(got, ""))
	}
}

func TestTokens(t *testing.T) {
	s := startLab(t, withTokenExpire(time.Hour))
	tok := call(t, s, "cmd", "mk_token", "eauth", "file", "username", labUser, "password", labPassword)
	if g := shape(tok, ""); g != `{"start":<float64>,"expire":<float64>,"name":"oduflow","eauth":"file","token":<string>}` {
		t.Fatalf("mk_token %s", g)
	}
	token := mget(t, tok, "token").(string)
	if len(token) != 64 {
		t.Errorf("token length %d", len(token))
	}
	if got := call(t, s, "cmd", "mk_token", "eauth", "file", "username", labUser, "password", "bad"); got != "" {
		t.Errorf("bad mk_token %v", got)
	}
	if got := call(t, s, "cmd", "get_token", "token", token); mget(t, got, "name") != labUser {
		t.Errorf("get_token %s", shape(got, ""))
	}
	if got := call(t, s, "cmd", "get_token", "token", "ffff"); shape(got, "") != "{}" {
		t.Errorf("unknown token %s", shape(got, ""))
	}
	if got := call(t, s, "cmd", "get_token"); got != false {
		t.Errorf("get_token without token %v", got)
	}
	got := call(t, s, publishLoad("test.ping", []any{labMinion}, "list", []any{}, "key", "",
		"kwargs", newOmap("token", token))...)
	if _, ok := mget(t, got, "load", "jid").(string); !ok {
		t.Fatalf("publish with token: %s", shape(got, ""))
	}
	// expired token
	s2 := startLab(t, withTokenExpire(-time.Minute)) // issued already expired: no wait for a clock
	tok = call(t, s2, "cmd", "mk_token", "eauth", "auto", "username", labUser, "password", "x")
	if got := call(t, s2, "cmd", "get_token", "token", mget(t, tok, "token")); shape(got, "") != "{}" {
		t.Errorf("expired token %s", shape(got, ""))
	}
}

func TestRunnerAndWheel(t *testing.T) {
	s := startLab(t)
	evs := dialEvents(t, s.EventsAddr())
	waitReaders(t, s, 1)
	got := call(t, s, "fun", "test.arg", "kwarg", newOmap("kwarg", newOmap("kw", "v"), "arg", []any{"a1", 2}),
		"username", labUser, "password", labPassword, "eauth", "file", "cmd", "runner")
	jid := mget(t, got, "jid").(string)
	if mget(t, got, "tag") != "salt/run/"+jid {
		t.Fatalf("runner reply %s", shape(got, ""))
	}
	evs.waitTag(t, "salt/run/"+jid+"/new")
	ret := evs.waitTag(t, "salt/run/"+jid+"/ret")
	if g := shape(mget(t, ret.data, "return"), ""); g != `{"args":["a1",int64:2],"kwargs":{"kw":"v"}}` {
		t.Errorf("runner return %s", g)
	}
	bad := call(t, s, "fun", "nodot", "kwarg", &omap{}, "username", labUser, "password", labPassword,
		"eauth", "file", "cmd", "runner")
	if mget(t, bad, "error", "name") != "SaltInvocationError" {
		t.Errorf("bad runner %s", shape(bad, ""))
	}
	got = call(t, s, "fun", "key.list_all", "key", labRootKey, "cmd", "wheel")
	if g := shape(mget(t, got, "data", "return", "minions"), ""); g != `["`+labMinion+`"]` ||
		mget(t, got, "data", "success") != true || mget(t, got, "data", "user") != "root" {
		t.Errorf("wheel %s", shape(got, ""))
	}
	got = call(t, s, "fun", "key.list_all", "key", labRootKey, "user", "root", "cmd", "wheel")
	if mget(t, got, "data", "success") != false {
		t.Errorf("wheel with user kwarg %s", shape(got, ""))
	}
	got = call(t, s, "fun", "key.list_all", "key", "wrong", "cmd", "wheel")
	if mget(t, got, "error", "name") != "UserAuthenticationError" {
		t.Errorf("wheel bad key %s", shape(got, ""))
	}
	got = call(t, s, "fun", "jobs.list_jobs", "kwarg", newOmap("arg", []any{}, "kwarg", &omap{}),
		"username", labUser, "password", "x", "eauth", "auto", "cmd", "runner")
	evs.waitTag(t, "salt/run/"+mget(t, got, "jid").(string)+"/ret")
	// a runner without "fun" on the key path is a caught KeyError
	got = call(t, s, "key", labRootKey, "cmd", "runner")
	if mget(t, got, "error", "name") != "KeyError" {
		t.Errorf("runner without fun %s", shape(got, ""))
	}
}

func TestEnvelopeErrors(t *testing.T) {
	s := startLab(t, WithMinimumAuthVersion(3))
	send := func(body []byte) any {
		r, err := zreq(t, s.Addr(), body, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		v, err := unpack(r.body)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	if got := send(envelope(t, 2, "cmd", "ping")); got != replyBadLoad {
		t.Errorf("version 2 with minimum 3: %v", got)
	}
	if got := send(envelope(t, 3, "cmd", "ping")); shape(got, "") != `{"cmd":"ping"}` {
		t.Errorf("version 3: %s", shape(got, ""))
	}
	if got := send([]byte{0xc1}); shape(got, "") != `{"msg":"bad load"}` {
		t.Errorf("undecodable: %s", shape(got, ""))
	}
	nomap, _ := packSalt(newOmap("enc", "clear", "version", 3))
	if got := send(nomap); got != replyBadLoad {
		t.Errorf("no load: %v", got)
	}
	aes, _ := packSalt(newOmap("enc", "aes", "load", "xx", "version", 3))
	if got := send(aes); got != replyBadLoad {
		t.Errorf("aes: %v", got)
	}
	strload, _ := packSalt(newOmap("enc", "clear", "load", "x", "version", 3))
	if got := send(strload); got != "payload and load must be a dict" {
		t.Errorf("string load: %v", got)
	}
	if got := send(envelope(t, 3, "cmd", "frobnicate")); shape(got, "") != "{}" {
		t.Errorf("unknown cmd: %v", got)
	}
	if got := send(envelope(t, 3, "probe", 1)); got != replyException {
		t.Errorf("no cmd: %v", got)
	}
	if got := send(envelope(t, 3, "cmd", "ping", "id", 5)); got != "bad load: id 5 is not a string" {
		t.Errorf("int id: %v", got)
	}
}

// TestMalformedPublish: a load without "ret" fails after the job events, nothing is published
// (protocol spec 3.4); without "user" it fails before anything.
func TestMalformedPublish(t *testing.T) {
	s := startLab(t)
	evs := dialEvents(t, s.EventsAddr())
	waitReaders(t, s, 1)
	kv := publishLoad("test.ping", []any{labMinion}, "list", []any{}, "jid", "20261129170000000003")
	var noRet []any
	for i := 0; i < len(kv); i += 2 {
		if kv[i] != "ret" {
			noRet = append(noRet, kv[i], kv[i+1])
		}
	}
	if got := call(t, s, noRet...); got != replyException {
		t.Fatalf("reply %v", got)
	}
	evs.waitTag(t, "salt/job/20261129170000000003/new")
	if n := s.PublicationCount("", ""); n != 0 {
		t.Errorf("published %d", n)
	}
	if got := call(t, s, "cmd", "publish", "fun", "test.ping", "tgt", "*"); got != replyException {
		t.Errorf("no user: %v", got)
	}
}

func TestKeyFileAndRotation(t *testing.T) {
	s := startSim(t, WithDir(shortDir(t)))
	st, err := os.Stat(s.KeyFile())
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("key file %v %v", st, err)
	}
	b, _ := os.ReadFile(s.KeyFile())
	if len(b) != 76 || string(b) != s.currentRootKey() {
		t.Fatalf("key %q", b)
	}
	if err := s.RotateKey(); err != nil {
		t.Fatal(err)
	}
	b2, _ := os.ReadFile(s.KeyFile())
	if string(b2) == string(b) {
		t.Error("key not rotated")
	}
	ev, err := os.Stat(strings.TrimPrefix(s.EventsAddr(), "unix://"))
	if err != nil || ev.Mode().Perm() != 0o600 {
		t.Errorf("event socket %v %v", ev, err)
	}
}

func TestStateHandlers(t *testing.T) {
	ret, rc := stateReturn("roles.client_stack", Succeeds, false)
	if rc != 0 || len(plain(ret).(map[string]any)) != 3 {
		t.Errorf("stack %d %v", rc, plain(ret))
	}
	h := stateHigh()
	high := map[string]any{"a": map[string]any{"test": []any{"fail_without_changes"}, "__sls__": "x"},
		"b": map[string]any{"test.succeed_without_changes": []any{map[string]any{"name": "bee"}}}}
	ret, rc = h(context.Background(), Job{Fun: "state.high", Args: []any{high}})
	m := plain(ret).(map[string]any)
	if rc != 2 || len(m) != 2 || m["test_|-b_|-bee_|-succeed_without_changes"] == nil {
		t.Errorf("state.high %d %v", rc, m)
	}
	ret, rc = stateApply(nil, false)(context.Background(), Job{Args: []any{"nosuch"}})
	if rc != 1 || !strings.Contains(plain(ret).([]any)[0].(string), "No matching sls") {
		t.Errorf("missing sls %d %v", rc, ret)
	}
	ret, rc = functions(nil)(context.Background(), Job{Fun: "x.y"})
	if rc != 1 || ret != "'x.y' is not available." {
		t.Errorf("unknown fun %d %v", rc, ret)
	}
}
