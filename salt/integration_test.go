package salt_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/errors"

	"github.com/oduflow/oduflow-go/salt"
)

// labEnv holds the ODUFLOW_SALT_* settings of a real master.
type labEnv struct {
	master, events, keyFile, eauth, user, password, minion string
}

func readLabEnv(t testing.TB) labEnv {
	t.Helper()
	e := labEnv{
		master:   os.Getenv("ODUFLOW_SALT_MASTER"),
		events:   os.Getenv("ODUFLOW_SALT_EVENTS"),
		keyFile:  os.Getenv("ODUFLOW_SALT_KEY_FILE"),
		eauth:    os.Getenv("ODUFLOW_SALT_EAUTH"),
		user:     os.Getenv("ODUFLOW_SALT_USER"),
		password: os.Getenv("ODUFLOW_SALT_PASSWORD"),
		minion:   os.Getenv("ODUFLOW_SALT_MINION"),
	}
	var missing []string
	for k, v := range map[string]string{"ODUFLOW_SALT_MASTER": e.master, "ODUFLOW_SALT_EVENTS": e.events,
		"ODUFLOW_SALT_KEY_FILE": e.keyFile, "ODUFLOW_SALT_EAUTH": e.eauth, "ODUFLOW_SALT_USER": e.user,
		"ODUFLOW_SALT_PASSWORD": e.password, "ODUFLOW_SALT_MINION": e.minion} {
		if v == "" {
			missing = append(missing, k)
		}
	}
	if len(missing) > 0 {
		t.Skipf("integration test against a real salt-master skipped: set %s "+
			"(for the lab: eval \"$(bash /work/shared/lab/saltlab.sh env)\")", strings.Join(missing, ", "))
	}
	return e
}

// waitEvent waits for the first event accepted by match; it fails on timeout.
func waitEvent(t *testing.T, s *salt.EventStream, d time.Duration, what string, match func(salt.Event) bool) salt.Event {
	t.Helper()
	timer := time.NewTimer(d)
	defer timer.Stop()
	for {
		select {
		case ev, ok := <-s.Events():
			if !ok {
				t.Fatalf("%s: event stream closed", what)
			}
			if ev.Kind() == salt.EventGap {
				t.Logf("gap while waiting for %s: %+v", what, *ev.Gap)
				continue
			}
			if match(ev) {
				return ev
			}
		case <-timer.C:
			t.Fatalf("%s: no event within %s", what, d)
		}
	}
}

func waitReturn(t *testing.T, s *salt.EventStream, jid salt.JID, minion string) *salt.JobReturn {
	t.Helper()
	ev := waitEvent(t, s, 30*time.Second, "return of "+string(jid), func(ev salt.Event) bool {
		return ev.Kind() == salt.EventJobReturn && ev.JobReturn.JID == jid && ev.JobReturn.MinionID == minion
	})
	return ev.JobReturn
}

func TestIntegrationLab(t *testing.T) {
	t.Parallel()
	env := readLabEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	jids := salt.NewJIDGenerator()

	// Subscribe BEFORE publishing: the bus has no replay.
	stream, err := salt.SubscribeEvents(ctx, env.events, salt.WithTagPrefixes("salt/job/", "salt/run/"))
	if err != nil {
		t.Fatalf("subscribe: %v", err)
	}
	defer stream.Close()

	plain, err := salt.NewClient(env.master, salt.WithRequestTimeout(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	if err := plain.Ping(ctx); err != nil {
		t.Fatalf("ping: %v", err)
	}
	t.Logf("ping ok (envelope version %d)", salt.DefaultEnvelopeVersion)

	tokens := salt.NewTokenSource(plain, env.eauth, env.user, env.password)
	auths := []struct {
		name string
		auth salt.Auth
	}{
		{"key", salt.UserKey("root", env.keyFile)},
		{"eauth", salt.Eauth(env.eauth, env.user, env.password)},
		{"token", salt.TokenAuth(tokens)},
	}
	for _, a := range auths {
		c, err := salt.NewClient(env.master, salt.WithAuth(a.auth), salt.WithRequestTimeout(30*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		jid := jids.Next()
		start := time.Now()
		res, err := c.Publish(ctx, salt.PublishRequest{Target: salt.ListTarget(env.minion), Fun: "test.ping",
			JID: jid, Metadata: map[string]any{"oduflow_test": a.name}})
		if err != nil {
			t.Fatalf("publish by %s: %v", a.name, err)
		}
		if res.JID != jid || len(res.Minions) != 1 || res.Minions[0] != env.minion || len(res.Missing) != 0 {
			t.Fatalf("publish by %s: %+v", a.name, res)
		}
		ret := waitReturn(t, stream, jid, env.minion)
		if ret.Return != true || ret.Retcode != 0 || !ret.Success || ret.Fun != "test.ping" || ret.Metadata["oduflow_test"] != a.name {
			t.Fatalf("return by %s: %+v", a.name, ret)
		}
		t.Logf("publish test.ping by %-5s jid=%s minions=%v -> return %v in %s", a.name, jid, res.Minions, ret.Return, time.Since(start).Round(time.Millisecond))
		_ = c.Close()
	}
	tok := tokens.Current()
	if tok == nil {
		t.Fatal("no token cached")
	}
	info, err := plain.GetToken(ctx, tok.Token)
	if err != nil || info.Name != env.user {
		t.Fatalf("get_token: %v %v", info, err)
	}
	t.Logf("get_token: %s", info)

	eauthClient, _ := salt.NewClient(env.master, salt.WithAuth(salt.TokenAuth(tokens)), salt.WithRequestTimeout(30*time.Second))
	defer eauthClient.Close()

	run, err := eauthClient.Runner(ctx, "test.arg", []any{"pos1", 2}, map[string]any{"kw": "v"})
	if err != nil {
		t.Fatalf("runner: %v", err)
	}
	ev := waitEvent(t, stream, 30*time.Second, "runner return", func(ev salt.Event) bool { return ev.Tag == run.Tag+"/ret" })
	rr, _ := ev.Data["return"].(map[string]any)
	if rr == nil || ev.Data["success"] != true {
		t.Fatalf("runner return %v", ev.Data)
	}
	t.Logf("runner test.arg jid=%s -> args=%v kwargs.kw=%v", run.JID, rr["args"], rr["kwargs"].(map[string]any)["kw"])

	wr, err := eauthClient.Wheel(ctx, "key.list_all", nil)
	if err != nil || !wr.Success {
		t.Fatalf("wheel: %v %+v", err, wr)
	}
	accepted, _ := wr.Return.(map[string]any)["minions"].([]any)
	found := false
	for _, m := range accepted {
		found = found || m == env.minion
	}
	if !found {
		t.Fatalf("wheel key.list_all: %v", wr.Return)
	}
	t.Logf("wheel key.list_all jid=%s -> minions=%v", wr.JID, accepted)

	// Typed errors.
	wrong, _ := salt.NewClient(env.master, salt.WithAuth(salt.Eauth(env.eauth, env.user, "wrong-password-for-test")))
	defer wrong.Close()
	_, err = wrong.Publish(ctx, salt.PublishRequest{Target: salt.ListTarget(env.minion), Fun: "test.ping", JID: jids.Next()})
	var me *salt.MasterError
	if !errors.Is(err, salt.ErrAuthentication) || !salt.IsNotPublished(err) || !errors.As(err, &me) {
		t.Fatalf("wrong password: %v", err)
	}
	if strings.Contains(err.Error(), "wrong-password-for-test") {
		t.Fatal("password in error string")
	}
	t.Logf("wrong password -> %v (ErrAuthentication, not published)", err)
	if _, err := plain.MkToken(ctx, env.eauth, env.user, "wrong-password-for-test"); !errors.Is(err, salt.ErrAuthentication) {
		t.Fatalf("mk_token wrong password: %v", err)
	}

	_, err = eauthClient.Publish(ctx, salt.PublishRequest{Target: salt.ListTarget(env.minion), Fun: "cmd.run",
		Args: []any{"echo hi"}, JID: jids.Next()})
	if !errors.Is(err, salt.ErrAuthorization) || errors.Is(err, salt.ErrAuthentication) || !salt.IsNotPublished(err) {
		t.Fatalf("cmd.run outside ACL: %v", err)
	}
	t.Logf("cmd.run outside the ACL -> %v (ErrAuthorization, not published)", err)

	keyClient, _ := salt.NewClient(env.master, salt.WithAuth(salt.UserKey("root", env.keyFile)))
	defer keyClient.Close()
	_, err = keyClient.Publish(ctx, salt.PublishRequest{Target: salt.GlobTarget("nomatch-*"), Fun: "test.ping", JID: jids.Next()})
	if !errors.Is(err, salt.ErrNoMinions) || !salt.IsNotPublished(err) {
		t.Fatalf("no minions: %v", err)
	}
	t.Logf("glob nomatch-* -> %v (ErrNoMinions)", err)

	old, _ := salt.NewClient(env.master, salt.WithEnvelopeVersion(2))
	defer old.Close()
	if err := old.Ping(ctx); err != nil {
		t.Logf("ping with envelope version 2: %v (master requires version 3)", err)
	} else {
		t.Log("ping with envelope version 2 also accepted (3006.0 behaviour)")
	}
}
