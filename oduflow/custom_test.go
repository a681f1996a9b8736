package oduflow

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/errors"

	"github.com/oduflow/oduflow-go/oduflow/catalog"
	"github.com/oduflow/oduflow-go/oduflow/claims"
	"github.com/oduflow/oduflow-go/receipt"
)

const (
	cstOK = `hello:
  test.succeed_without_changes:
    - name: hello
world:
  test.succeed_with_changes:
    - name: world
`
	cstOKReformatted = `# same states, same order, other layout
hello: {test.succeed_without_changes: [{name: hello}]}   # flow style

world:
    test.succeed_with_changes:
      - name: "world"
`
	cstFail = `hello:
  test.succeed_without_changes:
    - name: hello
will_fail:
  test.fail_without_changes:
    - name: nope
`
)

func TestCustomNeedsInitialConfiguration(t *testing.T) {
	t.Parallel()
	e := newCstEnv(t)
	ctx := context.Background()
	def := e.define("acme", cstOK)
	_, err := e.d.CustomStart(ctx, e.minion.id, receipt.NewRequestID(), def.ID, catalog.ModeApply)
	if !errors.Is(err, ErrInitialConfigurationMissing) {
		t.Fatalf("before configure: %v", err)
	}
	wantOneLine(t, "ErrInitialConfigurationMissing", err)
	e.configure()
	req := receipt.NewRequestID()
	r, err := e.d.CustomStart(ctx, e.minion.id, req, def.ID, catalog.ModeApply)
	if err != nil || r.ExecutionID != req || r.Reused != "" || r.JID == nil {
		t.Fatalf("start: %+v %v", r, err)
	}
	got := e.final(req)
	if got.Status != receipt.StatusSucceeded || got.Passed != 2 || got.Total != 2 || *got.JID != *r.JID {
		t.Fatalf("final: %+v", got)
	}
	// The published payload is canonical, bound to the frozen digest, and nothing else.
	exe, err := e.cat.Execution(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	var pub []any
	for _, p := range e.sim.Publications() {
		if p.Fun == funRun && p.Args[0] == req {
			pub = p.Args
		}
	}
	if len(pub) != 4 || pub[1] != "custom" || pub[2] != stateDataJSON(exe.Digest, exe.Canonical) ||
		!isFenceKwarg(pub[3], mustClaim(t, e.d, req).FenceToken, false) || exe.Digest != def.Digest {
		t.Fatalf("publication %v", pub)
	}
	if exe.Outcome.Status != receipt.StatusSucceeded || exe.Outcome.ConfirmedBy != catalog.ConfirmedByMinionReceipt {
		t.Fatalf("mirrored outcome %+v", exe.Outcome)
	}
	if cstJSONHas(got, "succeed_without_changes") || cstJSONHas(got, "hello") {
		t.Fatalf("status leaks source: %+v", got)
	}
}

func TestCustomAssertedConfigurationDoesNotCount(t *testing.T) {
	t.Parallel()
	e := newCstEnv(t)
	ctx := context.Background()
	// A configure claim whose publish outcome is unknown, then asserted succeeded by an operator.
	req := receipt.NewRequestID()
	e.loseRun.Store(true)
	if _, err := e.d.Start(ctx, e.minion.id, req, receipt.ProfileConfigure); err != nil {
		t.Fatal(err)
	}
	if c := e.waitClaimFinal(req); c.Status != receipt.StatusUnknown {
		t.Fatalf("configure: %+v", c)
	}
	if _, err := e.d.Reconcile(ctx, e.minion.id, req, Assert{Outcome: receipt.StatusSucceeded, Passed: 2, Total: 2,
		Who: "ops", Why: "checked by hand"}); err != nil {
		t.Fatal(err)
	}
	def := e.define("acme", cstOK)
	if _, err := e.d.CustomStart(ctx, e.minion.id, receipt.NewRequestID(), def.ID, catalog.ModeApply); !errors.Is(err, ErrInitialConfigurationMissing) {
		t.Fatalf("asserted configuration: %v", err)
	}
	if e.runs() != 0 {
		t.Fatal("published a custom run")
	}
}

func TestCustomReuseRunningThenSucceededThenApplyAgain(t *testing.T) {
	t.Parallel()
	e := newCstEnv(t)
	ctx := context.Background()
	e.configure()
	def := e.define("acme", cstOK)
	e.minion.setHold(true)
	r1 := receipt.NewRequestID()
	if _, err := e.d.CustomStart(ctx, e.minion.id, r1, def.ID, catalog.ModeApply); err != nil {
		t.Fatal(err)
	}
	cstWaitFor(t, func() bool { return e.runs() == 1 })
	// Later edits do not change what is running.
	if _, err := e.cat.SaveSource(ctx, def.ID, []byte(cstFail)); err != nil {
		t.Fatal(err)
	}
	r2 := receipt.NewRequestID()
	got, err := e.d.CustomStart(ctx, e.minion.id, r2, def.ID, catalog.ModeApply)
	if err != nil || got.ExecutionID != r1 || got.RequestID != r2 || got.Reused != reuseRunning ||
		got.Status != receipt.StatusRunning {
		t.Fatalf("reuse running: %+v %v", got, err)
	}
	r2b := receipt.NewRequestID()
	if got, err = e.d.CustomStart(ctx, e.minion.id, r2b, def.ID, catalog.ModeApplyAgain); err != nil || got.ExecutionID != r1 {
		t.Fatalf("apply again while running: %+v %v", got, err)
	}
	e.minion.setHold(false)
	if f := e.final(r2); f.Status != receipt.StatusSucceeded || f.ExecutionID != r1 || f.Passed != 2 {
		t.Fatalf("pointer final: %+v", f)
	}
	if e.runs() != 1 {
		t.Fatalf("%d runs", e.runs())
	}
	// Back to the succeeded source (reformatted: same digest): reuse without publishing.
	if _, err := e.cat.SaveSource(ctx, def.ID, []byte(cstOKReformatted)); err != nil {
		t.Fatal(err)
	}
	r3 := receipt.NewRequestID()
	got, err = e.d.CustomStart(ctx, e.minion.id, r3, def.ID, catalog.ModeApply)
	if err != nil || got.ExecutionID != r1 || got.Reused != reuseSucceeded ||
		got.Status != receipt.StatusSucceeded || got.Total != 2 {
		t.Fatalf("reuse succeeded: %+v %v", got, err)
	}
	// Apply again: a new execution of revision 3.
	r4 := receipt.NewRequestID()
	if got, err = e.d.CustomStart(ctx, e.minion.id, r4, def.ID, catalog.ModeApplyAgain); err != nil || got.ExecutionID != r4 {
		t.Fatalf("apply again: %+v %v", got, err)
	}
	if f := e.final(r4); f.Status != receipt.StatusSucceeded {
		t.Fatalf("apply again final: %+v", f)
	}
	if e.runs() != 2 {
		t.Fatalf("%d runs", e.runs())
	}
	x1, _ := e.cat.Execution(ctx, r1)
	x4, _ := e.cat.Execution(ctx, r4)
	if x1.Revision != 1 || x4.Revision != 3 || x1.Digest != x4.Digest || len(x1.Pointers) != 3 || x4.Mode != catalog.ModeApplyAgain {
		t.Fatalf("snapshots: %d %d %d", x1.Revision, x4.Revision, len(x1.Pointers))
	}
	// Repeating a request id returns its status and never publishes again.
	for _, req := range []string{r1, r2, r3, r4} {
		if got, err := e.d.CustomStart(ctx, e.minion.id, req, def.ID, catalog.ModeApply); err != nil ||
			got.Status != receipt.StatusSucceeded {
			t.Fatalf("repeat %s: %+v %v", req, got, err)
		}
	}
	if e.runs() != 2 {
		t.Fatalf("%d runs after repeats", e.runs())
	}
}

func TestCustomFailureConfirmedByReceipt(t *testing.T) {
	t.Parallel()
	e := newCstEnv(t)
	ctx := context.Background()
	e.configure()
	def := e.define("acme", cstFail)
	r1 := receipt.NewRequestID()
	if _, err := e.d.CustomStart(ctx, e.minion.id, r1, def.ID, catalog.ModeApply); err != nil {
		t.Fatal(err)
	}
	if f := e.final(r1); f.Status != receipt.StatusFailed || f.Passed != 1 || f.Total != 2 {
		t.Fatalf("failed run: %+v", f)
	}
	// The failure is confirmed by the minion receipt: a new attempt is allowed, in both modes.
	r2 := receipt.NewRequestID()
	if got, err := e.d.CustomStart(ctx, e.minion.id, r2, def.ID, catalog.ModeApply); err != nil || got.ExecutionID != r2 {
		t.Fatalf("retry: %+v %v", got, err)
	}
	e.final(r2)
	if e.runs() != 2 {
		t.Fatalf("%d runs", e.runs())
	}
}

func TestCustomUnknownBlocksAndAssertedFailureNeedsReceipt(t *testing.T) {
	t.Parallel()
	e := newCstEnv(t)
	ctx := context.Background()
	e.configure()
	def := e.define("acme", cstFail)
	other := e.define("acme", cstOK)
	// The publish reply is lost: the run happens on the minion, the master cannot prove it: unknown.
	e.minion.setHold(true)
	r1 := receipt.NewRequestID()
	e.dropRun.Store(true)
	if _, err := e.d.CustomStart(ctx, e.minion.id, r1, def.ID, catalog.ModeApply); err != nil {
		t.Fatal(err)
	}
	if f := e.final(r1); f.Status != receipt.StatusUnknown {
		t.Fatalf("lost reply: %+v", f)
	}
	var ue *UncertainError
	_, err := e.d.CustomStart(ctx, e.minion.id, receipt.NewRequestID(), other.ID, catalog.ModeApply)
	if !errors.As(err, &ue) || ue.RequestID != r1 {
		t.Fatalf("other definition while uncertain: %v", err)
	}
	// An operator asserts a failure; the minion is still running the job: the failure is not confirmed.
	if _, err := e.d.Reconcile(ctx, e.minion.id, r1, Assert{Outcome: receipt.StatusFailed, Total: 1,
		Who: "ops", Why: "looked at the box"}); err != nil {
		t.Fatal(err)
	}
	var nc *NeedsConfirmationError
	_, err = e.d.CustomStart(ctx, e.minion.id, receipt.NewRequestID(), def.ID, catalog.ModeApplyAgain)
	if !errors.As(err, &nc) || nc.RequestID != r1 || !nc.Dispatched {
		t.Fatalf("asserted failure: %v", err)
	}
	// Other definitions are free again (the assertion resolved the quarantine).
	rOther := receipt.NewRequestID()
	if _, err := e.d.CustomStart(ctx, e.minion.id, rOther, other.ID, catalog.ModeApply); err != nil {
		t.Fatal(err)
	}
	// The job ends on the minion; its receipt (read through oduflow_job.status) confirms the failure.
	e.minion.setHold(false)
	cstWaitFor(t, func() bool { _, ok := e.minion.receiptOf(r1); return ok })
	e.final(rOther)
	r3 := receipt.NewRequestID()
	got, err := e.d.CustomStart(ctx, e.minion.id, r3, def.ID, catalog.ModeApply)
	if err != nil || got.ExecutionID != r3 {
		t.Fatalf("after the receipt: %+v %v", got, err)
	}
	x1, _ := e.cat.Execution(ctx, r1)
	if x1.Outcome.ConfirmedBy != catalog.ConfirmedByMinionReceipt || x1.Outcome.Status != receipt.StatusFailed ||
		x1.Outcome.Passed != 1 || x1.Outcome.Total != 2 {
		t.Fatalf("r1 outcome %+v", x1.Outcome)
	}
	if s, err := e.d.CustomStatus(ctx, e.minion.id, r1); err != nil || s.Status != receipt.StatusFailed || s.Total != 2 {
		t.Fatalf("r1 status after confirmation: %+v %v", s, err)
	}
	// The master's own claim is corrected too (Reconcile FromMinion), the assertion kept for audit.
	if c, err := e.d.store.Get(ctx, r1); err != nil || c.Phase != claims.PhaseTerminal || c.Evidence != evidenceReconciled ||
		c.Status != receipt.StatusFailed || c.Passed != 1 || c.Total != 2 || c.AssertedBy != "ops" || c.Quarantining() {
		t.Fatalf("r1 claim after confirmation: %+v %v", c, err)
	}
	e.final(r3)
}

func TestCustomPreflightFailureConfirmedByMaster(t *testing.T) {
	t.Parallel()
	e := newCstEnv(t)
	ctx := context.Background()
	e.configure()
	def := e.define("acme", cstOK)
	lease, err := e.d.leases.AcquireClientLease(ctx, e.minion.id, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	r1 := receipt.NewRequestID()
	if _, err := e.d.CustomStart(ctx, e.minion.id, r1, def.ID, catalog.ModeApply); err != nil {
		t.Fatal(err)
	}
	f := e.final(r1)
	_ = lease.Release()
	if f.Status != receipt.StatusFailed || f.Passed != 0 || f.Total != 1 || e.runs() != 0 {
		t.Fatalf("preflight: %+v runs=%d", f, e.runs())
	}
	// A preflight failure is confirmed by the master's own record: apply again is allowed.
	r2 := receipt.NewRequestID()
	if got, err := e.d.CustomStart(ctx, e.minion.id, r2, def.ID, catalog.ModeApplyAgain); err != nil || got.ExecutionID != r2 {
		t.Fatalf("after preflight: %+v %v", got, err)
	}
	if f := e.final(r2); f.Status != receipt.StatusSucceeded {
		t.Fatalf("second: %+v", f)
	}
}

func TestCustomBindingsAndRefusals(t *testing.T) {
	t.Parallel()
	e := newCstEnv(t)
	ctx := context.Background()
	e.configure()
	def := e.define("acme", cstOK)
	unassigned, err := e.cat.CreateDefinition(ctx, "acme", "x", []byte(cstOK))
	if err != nil {
		t.Fatal(err)
	}
	_, err = e.d.CustomStart(ctx, e.minion.id, receipt.NewRequestID(), unassigned.ID, catalog.ModeApply)
	if !errors.Is(err, ErrNotAssigned) {
		t.Fatalf("unassigned: %v", err)
	}
	wantOneLine(t, "ErrNotAssigned", err)
	if _, err := e.d.CustomStart(ctx, e.minion.id, receipt.NewRequestID(), receipt.NewRequestID(), catalog.ModeApply); !errors.Is(err, catalog.ErrNotFound) {
		t.Fatalf("no definition: %v", err)
	}
	if _, err := e.d.CustomStart(ctx, e.minion.id, receipt.NewRequestID(), def.ID, "again"); !errors.Is(err, claims.ErrInvalidInput) {
		t.Fatalf("mode: %v", err)
	}
	if _, err := e.d.CustomStart(ctx, "client-1", receipt.NewRequestID(), def.ID, catalog.ModeApplyAgain); !errors.Is(err, claims.ErrInvalidInput) {
		t.Fatalf("minion: %v", err)
	}
	_, err = e.d.CustomStart(ctx, e.minion.id, receipt.NewRequestID(), def.ID, catalog.ModeApplyAgain)
	if !errors.Is(err, ErrApplyAgainWithoutTerminal) {
		t.Fatalf("apply again first: %v", err)
	}
	wantOneLine(t, "ErrApplyAgainWithoutTerminal", err)
	st, err := e.d.CustomStatus(ctx, e.minion.id, receipt.NewRequestID())
	if err != nil || st.Status != receipt.StatusNotStarted || st.JID != nil {
		t.Fatalf("never used: %+v %v", st, err)
	}
	r1 := receipt.NewRequestID()
	if _, err := e.d.CustomStart(ctx, e.minion.id, r1, def.ID, catalog.ModeApply); err != nil {
		t.Fatal(err)
	}
	e.final(r1)
	if _, err := e.d.CustomStart(ctx, e.minion.id, r1, unassigned.ID, catalog.ModeApply); !errors.Is(err, errDefinitionMismatch) {
		t.Fatalf("other definition: %v", err)
	}
	otherMinion := "client-" + receipt.NewRequestID()
	if _, err := e.d.CustomStatus(ctx, otherMinion, r1); !errors.Is(err, errMinionMismatch) {
		t.Fatalf("other minion: %v", err)
	}
	if _, err := e.d.Status(ctx, e.minion.id, r1, receipt.ProfileConfigure); !errors.Is(err, errProfileMismatch) {
		t.Fatalf("through another profile: %v", err)
	}
	if _, err := e.d.Start(ctx, e.minion.id, receipt.NewRequestID(), receipt.ProfileCustom); err == nil {
		t.Fatal("plain Start of the custom profile accepted")
	}
	// A configure request id cannot be used for a custom execution.
	cfg := receipt.NewRequestID()
	if _, err := e.d.Start(ctx, e.minion.id, cfg, receipt.ProfileConfigure); err != nil {
		t.Fatal(err)
	}
	e.waitClaimFinal(cfg)
	if _, err := e.d.CustomStart(ctx, e.minion.id, cfg, def.ID, catalog.ModeApplyAgain); !errors.Is(err, errProfileMismatch) {
		t.Fatalf("configure request as custom: %v", err)
	}
	if _, err := e.d.CustomStatus(ctx, e.minion.id, cfg); !errors.Is(err, errProfileMismatch) {
		t.Fatalf("configure request status as custom: %v", err)
	}
}

func TestCustomQueuedSnapshotIsDrivenNotDuplicated(t *testing.T) {
	t.Parallel()
	e := newCstEnv(t)
	ctx := context.Background()
	e.configure()
	def := e.define("acme", cstOK)
	// A crash after freezing the snapshot and before writing the claim leaves a queued execution.
	c, err := catalog.Compile(def.Source)
	if err != nil {
		t.Fatal(err)
	}
	queued := receipt.NewRequestID()
	if _, err := e.cat.CreateExecution(ctx, catalog.Execution{RequestID: queued, Company: "acme", DefinitionID: def.ID,
		Revision: def.Revision, Source: def.Source, Canonical: c.Canonical, Digest: c.Digest, MinionID: e.minion.id,
		Mode: catalog.ModeApply}); err != nil {
		t.Fatal(err)
	}
	if st, err := e.d.CustomStatus(ctx, e.minion.id, queued); err != nil || st.Status != receipt.StatusNotStarted {
		t.Fatalf("queued status: %+v %v", st, err)
	}
	r2 := receipt.NewRequestID()
	got, err := e.d.CustomStart(ctx, e.minion.id, r2, def.ID, catalog.ModeApply)
	if err != nil || got.ExecutionID != queued || got.Reused != reuseRunning {
		t.Fatalf("queued reuse: %+v %v", got, err)
	}
	if f := e.final(r2); f.Status != receipt.StatusSucceeded || e.runs() != 1 {
		t.Fatalf("final %+v runs %d", f, e.runs())
	}
}

func TestCustomDigestMismatchRefusedByMinion(t *testing.T) {
	t.Parallel()
	// The minion refuses a payload whose digest differs; the dispatcher never sends one, but the publication
	// source refuses a snapshot that does not match the claim before publishing.
	e := newCstEnv(t)
	src := &customPublications{store: e.cat}
	_, err := src.Publication(context.Background(), &claims.Claim{Profile: receipt.ProfileCustom, RequestID: receipt.NewRequestID(),
		MinionID: e.minion.id})
	if err == nil {
		t.Fatal("claim without payload reference accepted")
	}
	if _, _, _, ok := cstVerifyPayload(stateDataJSON(strings.Repeat("0", 64), []byte(`{"a":{"test":["nop"]}}`))); ok {
		t.Fatal("model minion accepted a wrong digest")
	}
}

func (m *cstMinion) receiptOf(request string) (receipt.Receipt, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.terminal[request]
	return r, ok
}

func cstWaitFor(t *testing.T, cond func() bool) {
	t.Helper()
	if !waitUntil(20*time.Second, cond) {
		t.Fatal("condition not reached")
	}
}

func TestCustomConcurrentAppliesRunOnce(t *testing.T) {
	t.Parallel()
	e := newCstEnv(t)
	ctx := context.Background()
	e.configure()
	def := e.define("acme", cstOK)
	e.minion.setHold(true)
	const n = 6
	ids := make(chan string, n)
	errs := make(chan error, n)
	for range n {
		go func() {
			r, err := e.d.CustomStart(ctx, e.minion.id, receipt.NewRequestID(), def.ID, catalog.ModeApply)
			errs <- err
			ids <- r.ExecutionID
		}()
	}
	seen := map[string]bool{}
	for range n {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
		seen[<-ids] = true
	}
	if len(seen) != 1 {
		t.Fatalf("%d executions for concurrent applies", len(seen))
	}
	e.minion.setHold(false)
	for id := range seen {
		if f := e.final(id); f.Status != receipt.StatusSucceeded {
			t.Fatalf("final %+v", f)
		}
	}
	if e.runs() != 1 {
		t.Fatalf("%d runs", e.runs())
	}
}
