package oduflow

import (
	"context"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/oduflow/oduflow-go/internal/errmark"

	"github.com/cockroachdb/errors"
	"github.com/google/uuid"

	"github.com/oduflow/oduflow-go/oduflow/catalog"
	"github.com/oduflow/oduflow-go/oduflow/claims"
	"github.com/oduflow/oduflow-go/oduflow/oduflowtest/fakeminion"
	"github.com/oduflow/oduflow-go/receipt"
	"github.com/oduflow/oduflow-go/salt"
	"github.com/oduflow/oduflow-go/salt/salttest"
)

// onStep runs fn once, at the first occurrence of step.
func onStep(step string, fn func()) Option {
	var once sync.Once
	return withStepHook(func(s string) {
		if s == step {
			once.Do(fn)
		}
	})
}

// waitClaim polls the claim until ok(claim) holds.
func waitClaim(t *testing.T, d *Dispatcher, req string, what string, ok func(*claims.Claim) bool) *claims.Claim {
	t.Helper()
	var c *claims.Claim
	if !waitUntil(20*time.Second, func() bool {
		got, err := d.store.Get(context.Background(), req)
		c = got
		return err == nil && ok(got)
	}) {
		t.Fatalf("request %s: never %s: %+v", req, what, mustClaim(t, d, req))
	}
	return c
}

// loseReplyAndReturn arms the simulator to drop the reply of the run publish and the return event of its
// JID (the run happens; only a status poll can tell).
func loseReplyAndReturn(t *testing.T, e *simEnv, d *Dispatcher, req string) {
	c, err := d.store.Get(context.Background(), req)
	if err != nil {
		t.Error(err)
		return
	}
	e.sim.DropNextReply(funRun)
	e.sim.DropNextReturn(c.JID)
}

// A lost publish reply: unknown and quarantined at once; the worker goes on polling, and the minion's
// receipt (read by a status poll: the return event is lost too) replaces unknown and releases the
// quarantine. Nothing is ever republished.
func TestLostPublishReplyIsUnknownAndQuarantines(t *testing.T) {
	t.Parallel()
	e := startSim(t)
	m := e.addMinion(fakeminion.WithHold())
	req := uuid.NewString()
	var d *Dispatcher
	d = e.dispatcher(onStep(stepDispatchRecorded, func() { loseReplyAndReturn(t, e, d, req) }))
	ctx := context.Background()
	mustStart(t, d, receipt.ProfileConfigure, m.ID(), req)
	c := waitClaim(t, d, req, "final", func(c *claims.Claim) bool { return c.Phase.Final() })
	if c.Status != receipt.StatusUnknown || c.ErrorCode != claims.CodeOutcomeUnknown || !c.Quarantining() {
		t.Fatalf("right after the publish: %+v", c)
	}
	if got, _ := d.Status(ctx, m.ID(), req, receipt.ProfileConfigure); got.Status != receipt.StatusUnknown {
		t.Fatalf("status %+v", got)
	}
	if q, _ := d.Quarantine(ctx, m.ID()); len(q) != 1 {
		t.Fatalf("quarantine %v", q)
	}
	// The publish went out (the simulator processed it) and is never republished.
	waitRuns(t, e, 1)
	if again := mustStart(t, d, receipt.ProfileConfigure, m.ID(), req); again.Status != receipt.StatusUnknown || e.runs() != 1 {
		t.Fatalf("repeat: %+v runs %d", again, e.runs())
	}
	// Quarantine across profiles (the worker still listens, but the client lease is free: quarantined).
	req2 := uuid.NewString()
	mustStart(t, d, receipt.ProfileCredentials, m.ID(), req2)
	if got := waitFinal(t, d, receipt.ProfileCredentials, m.ID(), req2); got.Status != receipt.StatusFailed {
		t.Fatalf("%+v", got)
	}
	if mustClaim(t, d, req2).ErrorCode != claims.CodeQuarantined || e.runs() != 1 {
		t.Fatal("not quarantined")
	}
	// The minion finishes; its return is lost; the worker's status poll reads the receipt.
	polls := e.sim.PublicationCount(funStatus, "")
	m.Release()
	c = waitClaim(t, d, req, "resolved", func(c *claims.Claim) bool { return c.Status != receipt.StatusUnknown })
	if c.Status != receipt.StatusSucceeded || c.Evidence != evidenceReceipt || c.Quarantining() || c.Passed != 1 {
		t.Fatalf("after the receipt: %+v", c)
	}
	if e.sim.PublicationCount(funStatus, "") <= polls {
		t.Fatal("resolved without a status poll")
	}
	if q, _ := d.Quarantine(ctx, m.ID()); len(q) != 0 {
		t.Fatalf("quarantine %v", q)
	}
	// Released: a new request runs.
	req3 := uuid.NewString()
	mustStart(t, d, receipt.ProfileConfigure, m.ID(), req3)
	if got := waitFinal(t, d, receipt.ProfileConfigure, m.ID(), req3); got.Status != receipt.StatusSucceeded || e.runs() != 2 {
		t.Fatalf("%+v runs %d", got, e.runs())
	}
}

// lostRun answers every oduflow_job.run with an outcome-unknown error without sending it: the master's
// view of a reply lost in transit, for a publication that never reached the minion.
type lostRun struct{ Publisher }

func (p lostRun) Publish(ctx context.Context, req salt.PublishRequest) (*salt.PublishResult, error) {
	if req.Fun == funRun {
		return nil, errmark.Mark(errors.New("test: reply lost"), salt.ErrOutcomeUnknown)
	}
	return p.Publisher.Publish(ctx, req)
}

// A minion that never ran the job answers not_started: that alone never resolves an unknown publish (the
// worker's polls leave it unknown); Reconcile FromMinion fences the publication first and records "never
// ran" from the minion's signed fenced receipt, and a late delivery of that publication runs nothing.
func TestLostPublishNeverRunIsFencedByReconcile(t *testing.T) {
	t.Parallel()
	e := startSim(t)
	m := e.addMinion()
	tm := testTimers()
	tm.ExecutionWait, tm.PollBudget = 1500*time.Millisecond, 3
	d := e.dispatcherWith(lostRun{e.client}, WithTimers(tm))
	ctx := context.Background()
	req := uuid.NewString()
	mustStart(t, d, receipt.ProfileConfigure, m.ID(), req)
	c := waitClaim(t, d, req, "final", func(c *claims.Claim) bool { return c.Phase.Final() })
	if c.Status != receipt.StatusUnknown || !c.Quarantining() {
		t.Fatalf("%+v", c)
	}
	if err := d.Wait(ctx); err != nil { // the worker polls out its window
		t.Fatal(err)
	}
	c = mustClaim(t, d, req)
	if c.Status != receipt.StatusUnknown || c.ErrorCode != claims.CodeOutcomeUnknown || !c.Quarantining() ||
		m.Calls(funStatus) == 0 || m.Runs() != 0 {
		t.Fatalf("after the window: %+v status calls %d runs %d", c, m.Calls(funStatus), m.Runs())
	}
	r, err := d.Reconcile(ctx, m.ID(), req, FromMinion{})
	if err != nil || r.Status != receipt.StatusFailed || r.Passed != 0 || r.Total != 1 {
		t.Fatalf("reconcile of a publication the minion never started: %+v %v", r, err)
	}
	c = mustClaim(t, d, req)
	if c.ErrorCode != claims.CodeNeverRan || c.Evidence != evidenceFenced || c.Quarantining() || m.Calls(funFence) != 1 {
		t.Fatalf("never ran: %+v (fence calls %d)", c, m.Calls(funFence))
	}
	if q, _ := d.Quarantine(ctx, m.ID()); len(q) != 0 {
		t.Fatalf("quarantine %v", q)
	}
	// The lost publication arrives late: the minion answers its fenced receipt and runs nothing.
	if _, err := e.client.Publish(ctx, salt.PublishRequest{Target: salt.ListTarget(m.ID()), Fun: funRun,
		Args: []any{req, string(receipt.ProfileConfigure), ""}, Kwargs: map[string]any{"fence_token": int64(c.FenceToken)},
		JID: salt.JID(c.JID), Timeout: publishTimeout}); err != nil {
		t.Fatal(err)
	}
	waitRuns(t, e, 1)
	// The minion's answer: a receipt, or a run it started.
	waitUntil(5*time.Second, func() bool { _, ok := m.Receipt(req); return ok || m.Runs() > 0 })
	if rc, ok := m.Receipt(req); m.Runs() != 0 || !ok || !rc.Fenced() {
		t.Fatalf("late publication: runs %d receipt %+v", m.Runs(), rc)
	}
	if got := mustClaim(t, d, req); got.ErrorCode != claims.CodeNeverRan || got.Status != receipt.StatusFailed {
		t.Fatalf("after the late publication: %+v", got)
	}
}

// Assert releases the quarantine of a request whose run started and whose outcome the minion cannot
// tell (unknown): the fence is confirmed (the publication can never start again), so the operator's
// outcome is recorded.
func TestAssertReleasesQuarantine(t *testing.T) {
	t.Parallel()
	e := startSim(t)
	m := e.addMinion(fakeminion.WithResult(receipt.ProfileProduction, fakeminion.Result{Status: receipt.StatusUnknown}))
	d := e.dispatcher()
	ctx := context.Background()
	req := uuid.NewString()
	mustStart(t, d, receipt.ProfileProduction, m.ID(), req)
	waitFinal(t, d, receipt.ProfileProduction, m.ID(), req)
	for _, bad := range []Assert{
		{Outcome: receipt.StatusSucceeded, Who: "", Why: "x"},
		{Outcome: receipt.StatusUnknown, Who: "op", Why: "x"},
		{Outcome: receipt.StatusFailed, Who: "op", Why: "line\nbreak"},
	} {
		if _, err := d.Reconcile(ctx, m.ID(), req, bad); !errors.Is(err, claims.ErrInvalidInput) {
			t.Fatalf("%+v: %v", bad, err)
		}
	}
	if c := mustClaim(t, d, req); c.Status != receipt.StatusUnknown || !c.Quarantining() {
		t.Fatalf("before the assertion: %+v", c)
	}
	r, err := d.Reconcile(ctx, m.ID(), req, Assert{Outcome: receipt.StatusFailed, Who: "alice", Why: "checked host by hand"})
	if err != nil || r.Status != receipt.StatusFailed {
		t.Fatalf("%+v %v", r, err)
	}
	c := mustClaim(t, d, req)
	if c.Phase != claims.PhaseAsserted || c.Evidence != evidenceAsserted || c.AssertedBy != "alice" || c.Quarantining() {
		t.Fatalf("%+v", c)
	}
	if _, err := d.Reconcile(ctx, m.ID(), req, Assert{Outcome: receipt.StatusSucceeded, Who: "bob", Why: "x"}); !errors.Is(err, ErrNotUnknown) {
		t.Fatalf("second reconcile: %v", err)
	}
	// The minion has no terminal receipt: FromMinion cannot replace the assertion.
	_, err = d.Reconcile(ctx, m.ID(), req, FromMinion{})
	if !errors.Is(err, ErrUnresolved) {
		t.Fatalf("from minion without a receipt: %v", err)
	}
	wantOneLine(t, "ErrUnresolved", err)
	if c := mustClaim(t, d, req); c.Phase != claims.PhaseAsserted {
		t.Fatalf("%+v", c)
	}
}

// Reconcile FromMinion replaces an operator's assertion by the minion's exact terminal receipt (evidence
// reconciled), keeping who and why for audit.
func TestReconcileFromMinionReplacesAssertion(t *testing.T) {
	t.Parallel()
	e := startSim(t)
	m := e.addMinion(fakeminion.WithHold(),
		fakeminion.WithResult(receipt.ProfileProduction, fakeminion.Result{Status: receipt.StatusFailed, Passed: 2, Total: 3}))
	req := uuid.NewString()
	var d *Dispatcher
	d = e.dispatcher(onStep(stepDispatchRecorded, func() { loseReplyAndReturn(t, e, d, req) }))
	ctx := context.Background()
	mustStart(t, d, receipt.ProfileProduction, m.ID(), req)
	waitClaim(t, d, req, "final", func(c *claims.Claim) bool { return c.Phase.Final() })
	// The operator asserts success while the minion still runs the job.
	if _, err := d.Reconcile(ctx, m.ID(), req, Assert{Outcome: receipt.StatusSucceeded, Passed: 3, Total: 3,
		Who: "alice", Why: "looked fine"}); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Reconcile(ctx, m.ID(), req, FromMinion{}); !errors.Is(err, ErrUnresolved) {
		t.Fatalf("running minion: %v", err)
	}
	m.Release()
	waitRuns(t, e, 1)
	var live receipt.Receipt
	cstWaitFor(t, func() bool { var ok bool; live, ok = m.Receipt(req); return ok })
	// The worker's own polls never override an assertion: only an explicit Reconcile does.
	time.Sleep(700 * time.Millisecond)
	if c := mustClaim(t, d, req); c.Phase != claims.PhaseAsserted || c.Status != receipt.StatusSucceeded {
		t.Fatalf("assertion overridden without Reconcile: %+v", c)
	}
	forged := live
	forged.Status, forged.Passed = receipt.StatusSucceeded, 3
	if _, err := d.Reconcile(ctx, m.ID(), req, FromMinion{Receipt: &forged}); !errors.Is(err, errEvidenceMismatch) {
		t.Fatalf("forged: %v", err)
	}
	r, err := d.Reconcile(ctx, m.ID(), req, FromMinion{Receipt: &live})
	if err != nil || r.Status != receipt.StatusFailed || r.Passed != 2 || r.Total != 3 {
		t.Fatalf("reconcile: %+v %v", r, err)
	}
	c := mustClaim(t, d, req)
	if c.Phase != claims.PhaseTerminal || c.Evidence != evidenceReconciled || c.AssertedBy != "alice" ||
		c.AssertedWhy != "looked fine" || c.Quarantining() || c.ErrorCode != "" {
		t.Fatalf("%+v", c)
	}
	if claimConfirmation(c) != catalog.ConfirmedByMinionReceipt {
		t.Fatalf("confirmation %v", claimConfirmation(c))
	}
	// Now resolved by a receipt: neither evidence applies again.
	if _, err := d.Reconcile(ctx, m.ID(), req, FromMinion{}); !errors.Is(err, ErrNotUnknown) {
		t.Fatalf("again: %v", err)
	}
}

func TestLostReturnRecoveredByPolling(t *testing.T) {
	t.Parallel()
	e := startSim(t)
	m := e.addMinion()
	d := e.dispatcher(onStep(stepPublishSending, func() { e.sim.DropNextReturn("") }))
	req := uuid.NewString()
	mustStart(t, d, receipt.ProfileConfigure, m.ID(), req)
	got := waitFinal(t, d, receipt.ProfileConfigure, m.ID(), req)
	if got.Status != receipt.StatusSucceeded || e.runs() != 1 {
		t.Fatalf("%+v runs %d", got, e.runs())
	}
	if e.sim.PublicationCount(funStatus, "") < 1 {
		t.Fatal("no status poll")
	}
}

func TestEventBusClosedAndReopened(t *testing.T) {
	t.Parallel()
	e := startSim(t)
	m := e.addMinion(fakeminion.WithDelay(300 * time.Millisecond))
	d := e.dispatcher(onStep(stepPublishReplied, func() { e.sim.CloseEventBus() }))
	req := uuid.NewString()
	mustStart(t, d, receipt.ProfileConfigure, m.ID(), req)
	got := waitFinal(t, d, receipt.ProfileConfigure, m.ID(), req)
	if got.Status != receipt.StatusSucceeded || e.runs() != 1 {
		t.Fatalf("%+v runs %d", got, e.runs())
	}
	// The shared subscription is back: a further request works through events.
	req2 := uuid.NewString()
	mustStart(t, d, receipt.ProfileConfigure, m.ID(), req2)
	if got := waitFinal(t, d, receipt.ProfileConfigure, m.ID(), req2); got.Status != receipt.StatusSucceeded {
		t.Fatalf("%+v", got)
	}
}

// runOnly routes oduflow_job.run through another client (to provoke refused replies from the simulator).
type runOnly struct {
	normal, run Publisher
	mutate      func(*salt.PublishRequest)
}

func (p runOnly) Publish(ctx context.Context, req salt.PublishRequest) (*salt.PublishResult, error) {
	if req.Fun != funRun {
		return p.normal.Publish(ctx, req)
	}
	if p.mutate != nil {
		p.mutate(&req)
	}
	return p.run.Publish(ctx, req)
}

func TestRefusedPublishFailsWithoutQuarantine(t *testing.T) {
	t.Parallel()
	e := startSim(t, salttest.WithMinimumAuthVersion(3), // as 3006.17+ masters: lower envelopes get "bad load"
		salttest.WithEauthUser("file", "reader", "pw-reader", []salttest.ACLEntry{
			salttest.AllowOn("client-*", `test.*`, `oduflow_job.status`, `oduflow_job.capabilities`)}))
	badKey := e.keyFile + ".bad"
	if err := os.WriteFile(badKey, []byte(strings.Repeat("A", 75)+"="), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		pub  func() Publisher
		code claims.ErrorCode
	}{
		{"authentication", func() Publisher {
			return runOnly{normal: e.client, run: e.newClient(salt.WithAuth(salt.UserKey("root", badKey)))}
		}, claims.CodeAuthentication},
		{"authorization", func() Publisher {
			return runOnly{normal: e.client, run: e.newClient(salt.WithAuth(salt.Eauth("file", "reader", "pw-reader")))}
		}, claims.CodeAuthorization},
		{"no minions", func() Publisher {
			return runOnly{normal: e.client, run: e.client, mutate: func(r *salt.PublishRequest) {
				r.Target = salt.ListTarget(newMinionID())
			}}
		}, claims.CodeNoMinions},
		{"bad load", func() Publisher {
			return runOnly{normal: e.client, run: e.newClient(salt.WithEnvelopeVersion(1))}
		}, claims.CodeBadLoad},
		{"master exception", func() Publisher { // "Some exception handling minion payload"
			return runOnly{normal: e.client, run: e.client, mutate: func(*salt.PublishRequest) {
				e.sim.ExceptionNextReply("publish")
			}}
		}, claims.CodeMasterException},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := e.addMinion()
			d := e.dispatcherWith(tc.pub())
			before := e.runs()
			req := uuid.NewString()
			mustStart(t, d, receipt.ProfileConfigure, m.ID(), req)
			got := waitFinal(t, d, receipt.ProfileConfigure, m.ID(), req)
			c := mustClaim(t, d, req)
			if got.Status != receipt.StatusFailed || c.ErrorCode != tc.code || c.Evidence != evidenceRefused ||
				c.Quarantining() || e.runs() != before || m.Runs() != 0 {
				t.Fatalf("%+v %+v runs %d", got, c, e.runs())
			}
			// Not quarantined: the next request on the same client runs (through the normal client).
			d2 := e.dispatcher()
			req2 := uuid.NewString()
			mustStart(t, d2, receipt.ProfileConfigure, m.ID(), req2)
			if got := waitFinal(t, d2, receipt.ProfileConfigure, m.ID(), req2); got.Status != receipt.StatusSucceeded {
				t.Fatalf("%+v", got)
			}
		})
	}
}

func TestUserKeyReadAgainAfterAuthError(t *testing.T) {
	t.Parallel()
	e := startSim(t)
	m := e.addMinion()
	// The master restarts (rotating its key) between the capability check and the run publish.
	d := e.dispatcher(onStep(stepDispatchRecorded, func() {
		if err := e.sim.RotateKey(); err != nil {
			t.Error(err)
		}
	}))
	req := uuid.NewString()
	mustStart(t, d, receipt.ProfileConfigure, m.ID(), req)
	if got := waitFinal(t, d, receipt.ProfileConfigure, m.ID(), req); got.Status != receipt.StatusFailed {
		t.Fatalf("%+v", got)
	}
	if c := mustClaim(t, d, req); c.ErrorCode != claims.CodeAuthentication || c.Quarantining() {
		t.Fatalf("%+v", c)
	}
	e.syncKey() // the deployment's key file now holds the new key: the next request reads it
	req2 := uuid.NewString()
	mustStart(t, d, receipt.ProfileConfigure, m.ID(), req2)
	if got := waitFinal(t, d, receipt.ProfileConfigure, m.ID(), req2); got.Status != receipt.StatusSucceeded || e.runs() != 1 {
		t.Fatalf("%+v runs %d", got, e.runs())
	}
}

// Assert of a request whose publication may still reach the minion is recorded only once the minion
// confirms the fence: a minion that cannot answer leaves it refused (ErrNotFenced, nothing written); one
// that answers records the stronger evidence, "never ran", instead of the assertion.
func TestAssertNeedsConfirmedFence(t *testing.T) {
	t.Parallel()
	e := startSim(t)
	m := e.addMinion()
	d := e.dispatcherWith(lostRun{e.client})
	ctx := context.Background()
	req := uuid.NewString()
	mustStart(t, d, receipt.ProfileProduction, m.ID(), req)
	waitFinal(t, d, receipt.ProfileProduction, m.ID(), req)
	e.sim.SetMinionOnline(m.ID(), false)
	_, err := d.Reconcile(ctx, m.ID(), req, Assert{Outcome: receipt.StatusFailed, Who: "alice", Why: "host looked idle"})
	if !errors.Is(err, ErrNotFenced) {
		t.Fatalf("assert without the minion: %v", err)
	}
	wantOneLine(t, "ErrNotFenced", err)
	if c := mustClaim(t, d, req); c.Phase != claims.PhaseTerminal || c.Status != receipt.StatusUnknown || !c.Quarantining() {
		t.Fatalf("after the refused assertion: %+v", c)
	}
	e.sim.SetMinionOnline(m.ID(), true)
	r, err := d.Reconcile(ctx, m.ID(), req, Assert{Outcome: receipt.StatusSucceeded, Passed: 1, Total: 1, Who: "alice", Why: "x"})
	if err != nil || r.Status != receipt.StatusFailed {
		t.Fatalf("assert with the minion answering: %+v %v", r, err)
	}
	if c := mustClaim(t, d, req); c.ErrorCode != claims.CodeNeverRan || c.Evidence != evidenceFenced || c.Quarantining() {
		t.Fatalf("never ran: %+v", c)
	}
}
