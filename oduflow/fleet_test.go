package oduflow

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/google/uuid"

	"github.com/oduflow/oduflow-go/oduflow/claims"
	"github.com/oduflow/oduflow-go/oduflow/oduflowtest/fakeminion"
	"github.com/oduflow/oduflow-go/profiles"
	"github.com/oduflow/oduflow-go/receipt"
	"github.com/oduflow/oduflow-go/salt"
	"github.com/oduflow/oduflow-go/salt/salttest"
)

// fleetTableYAML is a two-profile table of an operator's own on host-named minions.
const fleetTableYAML = `profiles:
  webserver: {sls: [roles.webserver, roles.monitoring]}
  full: {highstate: true}
minion_ids: salt
`

func fleetTable(t testing.TB, doc string) *profiles.Table {
	t.Helper()
	tb, err := profiles.ParseTable([]byte(doc), "fleet.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return tb
}

func (e *simEnv) addNamedMinion(id string, opts ...fakeminion.ModelOption) *fakeminion.Model {
	m := fakeminion.NewModel(id, opts...)
	e.accept(m)
	e.sim.AddMinion(m.ID(), m.Handle)
	return m
}

const (
	profWebserver receipt.Profile = "webserver"
	profFull      receipt.Profile = "full"
)

// A host-named minion with the operator's table: each profile runs at most once per request id (a
// repeated Start answers the same JID), the claim records the table's states, the run carries the
// table's digest, every result is proven, and fencing tokens go up.
func TestFleetHostNamedTable(t *testing.T) {
	t.Parallel()
	tb := fleetTable(t, fleetTableYAML)
	e := startSim(t)
	m := e.addNamedMinion("web01.lab.example", fakeminion.WithProfileTable(tb),
		fakeminion.WithResult(profWebserver, fakeminion.Result{Status: receipt.StatusSucceeded, Passed: 7, Total: 7}))
	d := e.dispatcher(WithProfiles(tb))
	ctx := context.Background()

	r, err := d.Ping(ctx, m.ID())
	if err != nil || !r.Ready() || !r.ProfileTable {
		t.Fatalf("ping %+v %v", r, err)
	}
	req := uuid.NewString()
	first := mustStart(t, d, profWebserver, m.ID(), req)
	got := waitFinal(t, d, profWebserver, m.ID(), req)
	if got.Status != receipt.StatusSucceeded || got.Passed != 7 || *got.JID != *first.JID {
		t.Fatalf("webserver: %+v", got)
	}
	again := mustStart(t, d, profWebserver, m.ID(), req)
	if *again.JID != *first.JID || again.Status != receipt.StatusSucceeded || e.runs() != 1 || m.Runs() != 1 {
		t.Fatalf("repeat: %+v runs %d/%d", again, e.runs(), m.Runs())
	}
	c := mustClaim(t, d, req)
	if c.Role != "roles.webserver,roles.monitoring" || c.Evidence != evidenceReceipt || c.MinionKeySHA256 == "" {
		t.Fatalf("claim %+v", c)
	}
	mark := m.FenceMark()
	for _, p := range e.sim.Publications() {
		if p.Fun != funRun || p.JID != c.JID {
			continue
		}
		kw, _ := p.Args[len(p.Args)-1].(map[string]any)
		if len(p.Target) != 1 || p.Target[0] != m.ID() || kw["profile_table"] != tb.Digest() {
			t.Fatalf("publication %+v", p)
		}
	}
	req2 := uuid.NewString()
	mustStart(t, d, profFull, m.ID(), req2)
	if got := waitFinal(t, d, profFull, m.ID(), req2); got.Status != receipt.StatusSucceeded {
		t.Fatalf("full: %+v", got)
	}
	if c := mustClaim(t, d, req2); c.Role != "@highstate" || m.FenceMark() <= mark || m.MaxConcurrentRuns() > 1 {
		t.Fatalf("highstate claim %+v mark %d", c, m.FenceMark())
	}
	// A profile the table does not hold, and a seeds' profile, are refused before any I/O.
	for _, p := range []receipt.Profile{receipt.ProfileConfigure, "nosuch"} {
		if _, err := d.Start(ctx, m.ID(), uuid.NewString(), p); !errors.Is(err, receipt.ErrUnknownProfile) ||
			!errors.Is(err, claims.ErrInvalidInput) {
			t.Fatalf("%s: %v", p, err)
		}
	}
}

// A minion whose table differs (another table, or none: the seeds') is refused profile_table_mismatch,
// failed 0/1, nothing published; Ping says why it is not ready. Never silently defaulted either way.
func TestFleetTableMismatch(t *testing.T) {
	t.Parallel()
	tb := fleetTable(t, fleetTableYAML)
	other := fleetTable(t, "profiles:\n  webserver: {sls: [roles.webserver]}\n  full: {highstate: true}\nminion_ids: salt\n")
	seedsID := newMinionID()
	for name, tc := range map[string]struct {
		minion   string
		minionTb *profiles.Table // nil: no oduflow_profiles (the seeds' table)
		disp     *profiles.Table // nil: the default
		profile  receipt.Profile
	}{
		"other table":                   {"web01.lab.example", other, tb, profWebserver},
		"minion without a table":        {seedsID, nil, tb, profWebserver},
		"default dispatcher, table":     {seedsID, fleetTable(t, "profiles:\n  configure: {sls: [roles.client_stack]}\n"), nil, receipt.ProfileConfigure},
		"host id outside minion policy": {"web01.lab.example", fleetTable(t, "profiles:\n  webserver: {sls: [roles.webserver, roles.monitoring]}\n  full: {highstate: true}\nminion_ids: seeds\n"), fleetTable(t, "profiles:\n  webserver: {sls: [roles.webserver, roles.monitoring]}\n  full: {highstate: true}\nminion_ids: seeds\n"), profWebserver},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := startSim(t)
			var mopts []fakeminion.ModelOption
			if tc.minionTb != nil {
				mopts = append(mopts, fakeminion.WithProfileTable(tc.minionTb))
			}
			m := e.addNamedMinion(tc.minion, mopts...)
			var dopts []Option
			if tc.disp != nil {
				dopts = append(dopts, WithProfiles(tc.disp))
			}
			d := e.dispatcher(dopts...)
			ctx := context.Background()
			if tc.disp != nil && tc.disp.ValidateMinionID(tc.minion) != nil {
				// the dispatcher's own policy refuses it first: typed, before any I/O
				if _, err := d.Start(ctx, tc.minion, uuid.NewString(), tc.profile); !errors.Is(err, receipt.ErrInvalidID) {
					t.Fatalf("start: %v", err)
				}
				return
			}
			if r, err := d.Ping(ctx, m.ID()); err != nil || r.Ready() || r.ProfileTable {
				t.Fatalf("ping %+v %v", r, err)
			}
			req := uuid.NewString()
			mustStart(t, d, tc.profile, m.ID(), req)
			got := waitFinal(t, d, tc.profile, m.ID(), req)
			if got.Status != receipt.StatusFailed || got.Passed != 0 || got.Total != 1 ||
				got.ErrorCode != claims.CodeProfileTableMismatch || e.runs() != 0 || m.Runs() != 0 {
				t.Fatalf("%+v runs %d", got, e.runs())
			}
			if c := mustClaim(t, d, req); c.Evidence != evidencePreflight || c.Quarantining() {
				t.Fatalf("claim %+v", c)
			}
		})
	}
}

// The module's own check: a run publication whose profile_table is not the minion's digest is refused
// before anything runs, whatever the dispatcher's preflight said.
func TestFleetMinionRefusesForeignTable(t *testing.T) {
	t.Parallel()
	tb := fleetTable(t, fleetTableYAML)
	m := fakeminion.NewModel("web01.lab.example", fakeminion.WithProfileTable(tb))
	for name, kw := range map[string]map[string]any{
		"none":  {"fence_token": int64(1)},
		"other": {"fence_token": int64(1), "profile_table": profiles.DefaultTable().Digest()},
	} {
		job := fakeminionJob(funRun, []any{uuid.NewString(), "webserver", ""}, kw)
		if ret, code := m.Handle(context.Background(), job); code != 1 || m.Runs() != 0 {
			t.Fatalf("%s: %v %d", name, ret, code)
		}
	}
}

// Quarantine holds across every profile of the table: an unknown webserver run blocks the highstate.
func TestFleetQuarantineAcrossProfiles(t *testing.T) {
	t.Parallel()
	tb := fleetTable(t, fleetTableYAML)
	e := startSim(t)
	m := e.addNamedMinion("db-01.example.com", fakeminion.WithProfileTable(tb), fakeminion.WithHold())
	req := uuid.NewString()
	var d *Dispatcher
	d = e.dispatcher(WithProfiles(tb), onStep(stepDispatchRecorded, func() { loseReplyAndReturn(t, e, d, req) }))
	ctx := context.Background()
	mustStart(t, d, profWebserver, m.ID(), req)
	c := waitClaim(t, d, req, "final", func(c *claims.Claim) bool { return c.Phase.Final() })
	if c.Status != receipt.StatusUnknown || !c.Quarantining() {
		t.Fatalf("%+v", c)
	}
	waitRuns(t, e, 1)
	req2 := uuid.NewString()
	mustStart(t, d, profFull, m.ID(), req2)
	if got := waitFinal(t, d, profFull, m.ID(), req2); got.ErrorCode != claims.CodeQuarantined || e.runs() != 1 {
		t.Fatalf("%+v runs %d", got, e.runs())
	}
	// The lost publication's receipt is read by a status poll; the quarantine lifts.
	m.Release()
	c = waitClaim(t, d, req, "resolved", func(c *claims.Claim) bool { return c.Status != receipt.StatusUnknown })
	if c.Status != receipt.StatusSucceeded || c.Evidence != evidenceReceipt || c.Quarantining() {
		t.Fatalf("%+v", c)
	}
	if q, _ := d.Quarantine(ctx, m.ID()); len(q) != 0 {
		t.Fatalf("quarantine %v", q)
	}
}

// The id policy at the dispatcher's boundary: the seeds' table takes client-<uuid> only; a salt table
// takes host names and refuses globs, lists, paths and the rest, typed, before any I/O.
func TestFleetIDPolicy(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	seeds := newOfflineWith(t)
	if _, err := seeds.Start(ctx, "web01.lab.example", uuid.NewString(), receipt.ProfileConfigure); !errors.Is(err, receipt.ErrInvalidID) {
		t.Fatalf("seeds table took a host id: %v", err)
	}
	d := newOfflineWith(t, WithProfiles(fleetTable(t, fleetTableYAML)))
	for _, id := range []string{"web*", "web01,web02", "web01/x", "..", "a..b", ".web", "-web", "web 01", "web\x00",
		"", string(make([]byte, 254)), strings.Repeat("a", 129), "web01.lock"} {
		if _, err := d.Start(ctx, id, uuid.NewString(), profWebserver); !errors.Is(err, receipt.ErrInvalidID) ||
			!errors.Is(err, claims.ErrInvalidInput) {
			t.Fatalf("%q: %v", id, err)
		}
		if _, err := d.Ping(ctx, id); !errors.Is(err, receipt.ErrInvalidID) {
			t.Fatalf("ping %q: %v", id, err)
		}
	}
}

// newOfflineWith is a Dispatcher that fails the test if it touches the network.
func newOfflineWith(t *testing.T, opts ...Option) *Dispatcher {
	t.Helper()
	nn := noNetwork{t}
	d, err := New(nn, nn, append([]Option{WithClaimDir(claimDir(t)), WithLogger(quietLogger())}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close(closedContext()) })
	return d
}

// fakeminionJob is a publication as the simulator hands it to a minion handler.
func fakeminionJob(fun string, args []any, kwargs map[string]any) salttest.Job {
	return salttest.Job{JID: "20261207010000000000", Fun: fun, Args: args, Kwargs: kwargs, MinionID: "web01.lab.example"}
}

// The real module on a host-named minion with the operator's table in its config (oduflow_profiles):
// the dispatcher with the same table runs both profiles (the sls list, the highstate) with proofs and
// fencing, at most once; a dispatcher with another table is refused profile_table_mismatch and
// publishes nothing.
func TestFleetPythonModule(t *testing.T) {
	t.Parallel()
	tb := fleetTable(t, fleetTableYAML)
	e := startSim(t)
	minion, h := startPyMinionNamed(t, e, fakeminion.PythonConfig{MinionOpts: map[string]any{
		"oduflow_profiles": tb.Document()}}, "web01.lab.example")
	d := e.dispatcher(pyTimers(), WithProfiles(tb))
	ctx := context.Background()
	if r, err := d.Ping(ctx, minion); err != nil || !r.Ready() {
		t.Fatalf("ping %+v %v", r, err)
	}
	req := uuid.NewString()
	first := mustStart(t, d, profWebserver, minion, req)
	if got := waitFinal(t, d, profWebserver, minion, req); got.Status != receipt.StatusSucceeded || got.Passed != 4 {
		t.Fatalf("webserver %+v", got)
	}
	if again := mustStart(t, d, profWebserver, minion, req); *again.JID != *first.JID || e.runs() != 1 {
		t.Fatalf("repeat %+v runs %d", again, e.runs())
	}
	req2 := uuid.NewString()
	mustStart(t, d, profFull, minion, req2)
	if got := waitFinal(t, d, profFull, minion, req2); got.Status != receipt.StatusSucceeded || got.Passed != 5 {
		t.Fatalf("full %+v", got)
	}
	if executions(t, h, minion) != 2 {
		t.Fatalf("executions %d", executions(t, h, minion))
	}
	other := e.dispatcherWith(e.client, pyTimers(), WithClaimDir(claimDir(t)),
		WithProfiles(fleetTable(t, "profiles:\n  webserver: {sls: [roles.webserver]}\nminion_ids: salt\n")))
	req3 := uuid.NewString()
	mustStart(t, other, profWebserver, minion, req3)
	got := waitFinal(t, other, profWebserver, minion, req3)
	if got.ErrorCode != claims.CodeProfileTableMismatch || got.Status != receipt.StatusFailed || e.runs() != 2 ||
		executions(t, h, minion) != 2 {
		t.Fatalf("other table: %+v runs %d", got, e.runs())
	}
}

// A lost run publication to a host-named minion with the operator's table: unknown and quarantined; the
// minion never started it (not_started never resolves it); Reconcile FromMinion fences it and records
// "never ran" from the minion's signed fenced receipt, and the late publication runs nothing.
func TestFleetLostPublicationFencedByReconcile(t *testing.T) {
	t.Parallel()
	tb := fleetTable(t, fleetTableYAML)
	e := startSim(t)
	m := e.addNamedMinion("db-02.example.com", fakeminion.WithProfileTable(tb))
	tm := testTimers()
	tm.ExecutionWait, tm.PollBudget = 1500*time.Millisecond, 3
	d := e.dispatcherWith(lostRun{e.client}, WithTimers(tm), WithProfiles(tb))
	ctx := context.Background()
	req := uuid.NewString()
	mustStart(t, d, profFull, m.ID(), req)
	if err := d.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	c := mustClaim(t, d, req)
	if c.Status != receipt.StatusUnknown || !c.Quarantining() || m.Runs() != 0 {
		t.Fatalf("after the window: %+v", c)
	}
	// every profile of the table is quarantined
	req2 := uuid.NewString()
	mustStart(t, d, profWebserver, m.ID(), req2)
	if got := waitFinal(t, d, profWebserver, m.ID(), req2); got.ErrorCode != claims.CodeQuarantined {
		t.Fatalf("%+v", got)
	}
	r, err := d.Reconcile(ctx, m.ID(), req, FromMinion{})
	if err != nil || r.Status != receipt.StatusFailed || r.Passed != 0 || r.Total != 1 {
		t.Fatalf("reconcile: %+v %v", r, err)
	}
	if c := mustClaim(t, d, req); c.ErrorCode != claims.CodeNeverRan || c.Evidence != evidenceFenced || c.Quarantining() {
		t.Fatalf("never ran: %+v", c)
	}
	c = mustClaim(t, d, req)
	if _, err := e.client.Publish(ctx, salt.PublishRequest{Target: salt.ListTarget(m.ID()), Fun: funRun,
		Args: []any{req, string(profFull), ""}, Kwargs: map[string]any{"fence_token": int64(c.FenceToken),
			"profile_table": tb.Digest()}, JID: salt.JID(c.JID), Timeout: publishTimeout}); err != nil {
		t.Fatal(err)
	}
	waitUntil(5*time.Second, func() bool { _, ok := m.Receipt(req); return ok || m.Runs() > 0 })
	if rc, ok := m.Receipt(req); m.Runs() != 0 || !ok || !rc.Fenced() || rc.MinionID != m.ID() || rc.Profile != profFull {
		t.Fatalf("late publication: runs %d receipt %+v", m.Runs(), rc)
	}
}
