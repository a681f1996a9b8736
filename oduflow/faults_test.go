package oduflow

import (
	"context"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/google/uuid"

	"github.com/oduflow/oduflow-go/internal/saltsim"
	"github.com/oduflow/oduflow-go/internal/simminion"
	"github.com/oduflow/oduflow-go/receipt"
	"github.com/oduflow/oduflow-go/salt"
)

// onStep runs fn once, at the first occurrence of step.
func onStep(step string, fn func()) Option {
	var once sync.Once
	return WithStepHook(func(s string) {
		if s == step {
			once.Do(fn)
		}
	})
}

func TestLostPublishReplyIsUnknownAndQuarantines(t *testing.T) {
	e := startSim(t)
	m := e.addMinion()
	d := e.dispatcher(onStep(StepDispatchRecorded, func() { e.sim.DropNextReply("publish") }))
	ctx := context.Background()
	req := uuid.NewString()
	mustStart(t, d, receipt.ProfileConfigure, m.ID(), req)
	got := waitFinal(t, d, receipt.ProfileConfigure, m.ID(), req)
	if got.Status != receipt.StatusUnknown {
		t.Fatalf("%+v", got)
	}
	c := mustClaim(t, d, req)
	if c.ErrorCode != CodeOutcomeUnknown || !c.Quarantining() {
		t.Fatalf("%+v", c)
	}
	// The publish went out (the simulator processed it) and is never republished.
	waitRuns(t, e, 1)
	time.Sleep(200 * time.Millisecond)
	if again := mustStart(t, d, receipt.ProfileConfigure, m.ID(), req); again.Status != receipt.StatusUnknown || e.runs() != 1 {
		t.Fatalf("repeat: %+v runs %d", again, e.runs())
	}
	// Quarantine across profiles.
	req2 := uuid.NewString()
	mustStart(t, d, receipt.ProfileCredentials, m.ID(), req2)
	if got := waitFinal(t, d, receipt.ProfileCredentials, m.ID(), req2); got.Status != receipt.StatusFailed {
		t.Fatalf("%+v", got)
	}
	if mustClaim(t, d, req2).ErrorCode != CodeQuarantined || e.runs() != 1 {
		t.Fatal("not quarantined")
	}
	// A caller receipt that differs from the live one is refused; the exact one reconciles.
	live, ok := m.Receipt(req)
	if !ok {
		t.Fatal("minion has no receipt")
	}
	forged := live
	forged.Passed, forged.Total = 5, 5
	if _, err := d.Reconcile(ctx, m.ID(), req, FromMinion{Receipt: &forged}); !errors.Is(err, ErrEvidenceMismatch) {
		t.Fatalf("forged: %v", err)
	}
	r, err := d.Reconcile(ctx, m.ID(), req, FromMinion{Receipt: &live})
	if err != nil || r.Status != receipt.StatusSucceeded {
		t.Fatalf("reconcile: %+v %v", r, err)
	}
	if c := mustClaim(t, d, req); c.Evidence != EvidenceReconciled || c.Quarantining() {
		t.Fatalf("%+v", c)
	}
	// Released: a new request runs.
	req3 := uuid.NewString()
	mustStart(t, d, receipt.ProfileConfigure, m.ID(), req3)
	if got := waitFinal(t, d, receipt.ProfileConfigure, m.ID(), req3); got.Status != receipt.StatusSucceeded || e.runs() != 2 {
		t.Fatalf("%+v runs %d", got, e.runs())
	}
}

func TestAssertReleasesQuarantine(t *testing.T) {
	e := startSim(t)
	m := e.addMinion()
	d := e.dispatcher(onStep(StepDispatchRecorded, func() { e.sim.DropNextReply("publish") }))
	ctx := context.Background()
	req := uuid.NewString()
	mustStart(t, d, receipt.ProfileProduction, m.ID(), req)
	waitFinal(t, d, receipt.ProfileProduction, m.ID(), req)
	for _, bad := range []Assert{
		{Outcome: receipt.StatusSucceeded, Who: "", Why: "x"},
		{Outcome: receipt.StatusUnknown, Who: "op", Why: "x"},
		{Outcome: receipt.StatusFailed, Who: "op", Why: "line\nbreak"},
	} {
		if _, err := d.Reconcile(ctx, m.ID(), req, bad); !errors.Is(err, ErrInvalidInput) {
			t.Fatalf("%+v: %v", bad, err)
		}
	}
	r, err := d.Reconcile(ctx, m.ID(), req, Assert{Outcome: receipt.StatusFailed, Who: "alice", Why: "checked host by hand"})
	if err != nil || r.Status != receipt.StatusFailed {
		t.Fatalf("%+v %v", r, err)
	}
	c := mustClaim(t, d, req)
	if c.Phase != PhaseAsserted || c.Evidence != EvidenceAsserted || c.AssertedBy != "alice" || c.Quarantining() {
		t.Fatalf("%+v", c)
	}
	if _, err := d.Reconcile(ctx, m.ID(), req, Assert{Outcome: receipt.StatusSucceeded, Who: "bob", Why: "x"}); !errors.Is(err, ErrNotUnknown) {
		t.Fatalf("second reconcile: %v", err)
	}
}

func TestLostReturnRecoveredByPolling(t *testing.T) {
	e := startSim(t)
	m := e.addMinion()
	d := e.dispatcher(onStep(StepPublishSending, func() { e.sim.DropNextReturn("") }))
	req := uuid.NewString()
	mustStart(t, d, receipt.ProfileConfigure, m.ID(), req)
	got := waitFinal(t, d, receipt.ProfileConfigure, m.ID(), req)
	if got.Status != receipt.StatusSucceeded || e.runs() != 1 {
		t.Fatalf("%+v runs %d", got, e.runs())
	}
	if e.sim.CountPublications(FunStatus) < 1 {
		t.Fatal("no status poll")
	}
}

func TestEventBusClosedAndReopened(t *testing.T) {
	e := startSim(t)
	m := e.addMinion(simminion.WithDelay(300 * time.Millisecond))
	d := e.dispatcher(onStep(StepPublishReplied, func() { e.sim.CloseEventBus() }))
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
	if req.Fun != FunRun {
		return p.normal.Publish(ctx, req)
	}
	if p.mutate != nil {
		p.mutate(&req)
	}
	return p.run.Publish(ctx, req)
}

func TestRefusedPublishFailsWithoutQuarantine(t *testing.T) {
	e := startSim(t, saltsim.WithMinimumAuthVersion(3), // as 3006.17+ masters: lower envelopes get "bad load"
		saltsim.WithEauthUser("file", "reader", "pw-reader", []saltsim.ACLEntry{
			saltsim.AllowOn("client-*", `test.*`, `oduflow_job.status`, `oduflow_job.capabilities`)}))
	badKey := e.keyFile + ".bad"
	if err := os.WriteFile(badKey, []byte("not-the-key"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		pub  func() Publisher
		code string
	}{
		{"authentication", func() Publisher {
			return runOnly{normal: e.client, run: e.newClient(salt.WithAuth(salt.UserKey("root", badKey)))}
		}, CodeAuthentication},
		{"authorization", func() Publisher {
			return runOnly{normal: e.client, run: e.newClient(salt.WithAuth(salt.Eauth("file", "reader", "pw-reader")))}
		}, CodeAuthorization},
		{"no minions", func() Publisher {
			return runOnly{normal: e.client, run: e.client, mutate: func(r *salt.PublishRequest) {
				r.Target = salt.ListTarget(newMinionID())
			}}
		}, CodeNoMinions},
		{"bad load", func() Publisher {
			return runOnly{normal: e.client, run: e.newClient(salt.WithEnvelopeVersion(1))}
		}, CodeBadLoad},
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
			if got.Status != receipt.StatusFailed || c.ErrorCode != tc.code || c.Evidence != EvidenceRefused ||
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
	e := startSim(t)
	m := e.addMinion()
	// The master restarts (rotating its key) between the capability check and the run publish.
	d := e.dispatcher(onStep(StepDispatchRecorded, func() {
		if err := e.sim.RotateKey(); err != nil {
			t.Error(err)
		}
	}))
	req := uuid.NewString()
	mustStart(t, d, receipt.ProfileConfigure, m.ID(), req)
	if got := waitFinal(t, d, receipt.ProfileConfigure, m.ID(), req); got.Status != receipt.StatusFailed {
		t.Fatalf("%+v", got)
	}
	if c := mustClaim(t, d, req); c.ErrorCode != CodeAuthentication || c.Quarantining() {
		t.Fatalf("%+v", c)
	}
	e.syncKey() // the deployment's key file now holds the new key: the next request reads it
	req2 := uuid.NewString()
	mustStart(t, d, receipt.ProfileConfigure, m.ID(), req2)
	if got := waitFinal(t, d, receipt.ProfileConfigure, m.ID(), req2); got.Status != receipt.StatusSucceeded || e.runs() != 1 {
		t.Fatalf("%+v runs %d", got, e.runs())
	}
}
