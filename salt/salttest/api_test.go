package salttest

import (
	"context"
	"testing"
)

// TestGenericMinionRolesAndRegisteredFuncs: AddMinion(id, nil) runs the roles set with WithRole,
// unlisted roles succeed, RegisterFunc adds a function to every minion (custom handlers too)
// and a nil handler removes it again; PublicationCount filters by function and JID.
func TestGenericMinionRolesAndRegisteredFuncs(t *testing.T) {
	s := startSim(t, WithDir(shortDir(t)), withRootKey(labRootKey), WithRole("roles.broken", Fails))
	const custom = "client-custom"
	s.AddMinion(labMinion, nil)
	s.AddMinion(custom, func(context.Context, Job) (any, int) { return "own handler", 0 })
	evs := dialEvents(t, s.EventsAddr())
	waitReaders(t, s, 1)

	publish := func(jid, fun string, tgt []any, args ...any) {
		t.Helper()
		if args == nil {
			args = []any{}
		}
		call(t, s, publishLoad(fun, tgt, "list", args, "jid", jid)...)
	}
	retOf := func(jid, id string) *omap {
		t.Helper()
		return evs.waitTag(t, "salt/job/"+jid+"/ret/"+id).data
	}

	publish("20261201120000000001", "state.apply", []any{labMinion}, "roles.broken")
	if r := retOf("20261201120000000001", labMinion); mget(t, r, "retcode") != int64(2) || mget(t, r, "success") != false {
		t.Errorf("WithRole Fails: %s", shape(r, ""))
	}
	publish("20261201120000000002", "state.apply", []any{labMinion}, "roles.anything")
	if r := retOf("20261201120000000002", labMinion); mget(t, r, "retcode") != int64(0) {
		t.Errorf("unlisted role: %s", shape(r, ""))
	}
	publish("20261201120000000003", "custom.hello", []any{labMinion})
	if r := retOf("20261201120000000003", labMinion); mget(t, r, "return") != "'custom.hello' is not available." {
		t.Errorf("unregistered function: %s", shape(r, ""))
	}

	s.RegisterFunc("custom.hello", func(_ context.Context, job Job) (any, int) { return "hello " + job.MinionID, 0 })
	publish("20261201120000000004", "custom.hello", []any{labMinion, custom})
	got := map[string]any{} // the two returns arrive in either order
	for len(got) < 2 {
		ev := evs.waitTag(t, "salt/job/20261201120000000004/ret/*")
		id, _ := ev.data.Str("id")
		got[id], _ = ev.data.Get("return")
	}
	if got[labMinion] != "hello "+labMinion || got[custom] != "hello "+custom {
		t.Errorf("registered function returns %v", got)
	}

	s.RegisterFunc("custom.hello", nil)
	publish("20261201120000000005", "custom.hello", []any{custom})
	if r := retOf("20261201120000000005", custom); mget(t, r, "return") != "own handler" {
		t.Errorf("after unregistering: %s", shape(r, ""))
	}

	if n := s.PublicationCount("custom.hello", ""); n != 3 {
		t.Errorf("PublicationCount(custom.hello) = %d, want 3", n)
	}
	if n := s.PublicationCount("", "20261201120000000004"); n != 1 {
		t.Errorf("PublicationCount of one jid = %d, want 1", n)
	}
	if n := s.PublicationCount("state.apply", "20261201120000000004"); n != 0 {
		t.Errorf("PublicationCount(other fun, jid) = %d, want 0", n)
	}
}
