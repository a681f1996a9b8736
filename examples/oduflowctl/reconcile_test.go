package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/oduflow/oduflow-go/internal/testwait"
	"github.com/oduflow/oduflow-go/oduflow/claims"
	"github.com/oduflow/oduflow-go/oduflow/filestore"
	"github.com/oduflow/oduflow-go/profiles"
	"github.com/oduflow/oduflow-go/receipt"
	"github.com/oduflow/oduflow-go/salt"
)

// writeLostClaim stores a configure claim that was dispatched an hour ago by a worker that is
// gone, as a crash would leave it: its status is unknown and it quarantines the client.
func writeLostClaim(t *testing.T, stateDir, minion string) string {
	t.Helper()
	return writeLostClaimIn(t, stateDir, minion, claims.PhaseDispatched)
}

// writeLostClaimIn is writeLostClaim with the phase the worker left the claim in (claimed: it never
// recorded a dispatch intent, so it never quarantines and can never be published).
func writeLostClaimIn(t *testing.T, stateDir, minion string, phase claims.Phase) string {
	t.Helper()
	st, err := filestore.Open(stateDir)
	if err != nil {
		t.Fatal(err)
	}
	role, err := profiles.RoleFor(receipt.ProfileConfigure)
	if err != nil {
		t.Fatal(err)
	}
	then := time.Now().UTC().Add(-time.Hour)
	// The file store measures a claim's windows on the host's monotonic clock: a claim written during an
	// earlier boot (another boot id) has both windows run out, as a crash an hour ago would leave them.
	const earlierBoot = "00000000-0000-4000-8000-000000000000/1"
	c := &claims.Claim{Protocol: 1, MinionID: minion, RequestID: receipt.NewRequestID(),
		Profile: receipt.ProfileConfigure, Role: string(role), JID: string(salt.NewJIDGenerator().Next()),
		Phase: claims.PhaseClaimed, CreatedAt: then, CreatedClock: earlierBoot}
	ctx := context.Background()
	if err := st.Create(ctx, c); err != nil {
		t.Fatal(err)
	}
	if phase == claims.PhaseClaimed {
		return c.RequestID
	}
	// Dispatched as a worker does it: the intent under both leases, where the store issues the claim's
	// fencing token (a dispatched claim always has one), then the worker is gone.
	reqLock, err := st.TryRequestLock(ctx, c.RequestID)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = reqLock.Release() }()
	lease, err := st.AcquireClientLease(ctx, minion, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = lease.Release() }()
	cur, err := st.Get(ctx, c.RequestID)
	if err != nil {
		t.Fatal(err)
	}
	next := *cur
	next.Phase, next.DispatchedAt, next.DispatchedClock = claims.PhaseDispatching, &then, earlierBoot
	if cur, err = st.CompareAndSwapHeld(ctx, &next, reqLock, lease); err != nil {
		t.Fatal(err)
	}
	if phase != claims.PhaseDispatching {
		next = *cur
		next.Phase = phase
		if _, err := st.CompareAndSwap(ctx, &next); err != nil {
			t.Fatal(err)
		}
	}
	return c.RequestID
}

func stateDir(env []string) string {
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "ODUFLOW_STATE_DIR="); ok {
			return v
		}
	}
	return ""
}

func TestReconcileALostRequest(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	req := writeLostClaim(t, stateDir(l.env), l.minion)

	r := run(t, l.env, "status", "configure", l.minion, req)
	must(t, r, 5) // unknown: never start a replacement, reconcile
	if s := response(t, oneLine(t, r.stdout)); s["status"] != "unknown" {
		t.Fatalf("lost claim: %s", r.stdout)
	}
	// The unknown dispatched request quarantines the client: a new request fails its preflight
	// (failed, 0 of 1) and publishes nothing.
	r = run(t, l.env, "start", "production", l.minion, "--wait", "--interval", "100ms")
	must(t, r, 1)
	if s := response(t, oneLine(t, r.stdout)); s["status"] != "failed" || s["passed"] != 0.0 || s["total"] != 1.0 {
		t.Fatalf("quarantined start: %s", r.stdout)
	}
	if n := l.sim.PublicationCount("oduflow_job.run", ""); n != 0 {
		t.Fatalf("published %d runs while quarantined", n)
	}
	// The minion has no receipt for that JID: --from-minion fences the publication (it can never run
	// now) and records, from the minion's signed fenced receipt, that it never ran.
	r = run(t, l.env, "reconcile", l.minion, req, "--from-minion")
	must(t, r, 1)
	if s := response(t, oneLine(t, r.stdout)); s["status"] != "failed" || s["passed"] != 0.0 || s["total"] != 1.0 {
		t.Fatalf("never ran: %s", r.stdout)
	}
	st, err := filestore.Open(stateDir(l.env))
	if err != nil {
		t.Fatal(err)
	}
	c, err := st.Get(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if c.Phase != claims.PhaseTerminal || c.ErrorCode != claims.CodeNeverRan || c.Evidence != "fenced" || c.Quarantining() {
		t.Fatalf("claim after reconcile: %+v", c)
	}
	// A lost request that never recorded its dispatch intent can never be published: an operator
	// asserts its outcome, with who and why.
	lost := writeLostClaimIn(t, stateDir(l.env), l.minion, claims.PhaseClaimed)
	r = run(t, l.env, "reconcile", l.minion, lost, "--assert", "failed", "--reason", "checked the server by hand", "--who", "ops-anna")
	must(t, r, 1)
	if s := response(t, oneLine(t, r.stdout)); s["status"] != "failed" {
		t.Fatalf("asserted: %s", r.stdout)
	}
	if c, err = st.Get(context.Background(), lost); err != nil {
		t.Fatal(err)
	}
	if c.Phase != claims.PhaseAsserted || c.AssertedBy != "ops-anna" || c.AssertedWhy != "checked the server by hand" {
		t.Fatalf("claim after assert: %+v", c)
	}
	// Released: a new request runs.
	r = run(t, l.env, "start", "configure", l.minion, "--wait", "--interval", "100ms")
	must(t, r, 0)
	// Reconciling a request that is not unknown is refused.
	r = run(t, l.env, "reconcile", l.minion, req, "--assert", "succeeded", "--reason", "again")
	if r.code == 0 {
		t.Fatalf("second reconcile: %s", r)
	}
	t.Logf("second reconcile: %s", r)
}

// forgetResult rewrites a finished claim as a worker whose window was spent would leave it: unknown
// (it quarantines), while the minion holds its receipt.
func forgetResult(t *testing.T, stateDir, request string) {
	t.Helper()
	st, err := filestore.Open(stateDir)
	if err != nil {
		t.Fatal(err)
	}
	c, err := st.Get(context.Background(), request)
	if err != nil {
		t.Fatal(err)
	}
	c.Status, c.Passed, c.Total = receipt.StatusUnknown, 0, 0
	c.ErrorCode, c.Evidence = claims.CodeNoTrustworthyReturn, "none"
	if _, err := st.CompareAndSwap(context.Background(), c); err != nil {
		t.Fatal(err)
	}
}

func TestResumeReturnsAtOnceAndWaits(t *testing.T) {
	t.Parallel()
	l := newLabModel(t, false)
	dir := stateDir(l.env)
	started := func() string {
		r := run(t, l.env, "start", "configure", l.minion, "--wait", "--interval", "50ms")
		must(t, r, 0)
		req, _ := response(t, oneLine(t, r.stdout))["request_id"].(string)
		forgetResult(t, dir, req)
		return req
	}
	// Without --wait: the polling runs in a detached worker; the command answers at once.
	req := started()
	t0 := time.Now()
	r := run(t, l.env, "resume", l.minion, req)
	if took := time.Since(t0); took > 10*time.Second {
		t.Fatalf("resume took %s", took)
	}
	if s := response(t, oneLine(t, r.stdout)); s["status"] != "unknown" && s["status"] != "succeeded" {
		t.Fatalf("resume: %s", r)
	}
	st, err := filestore.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	// the resumed worker is a process of its own: its claim write is what the test can see
	testwait.Until(t, "resumed request never resolved", 20*time.Second, func() bool {
		c, err := st.Get(context.Background(), req)
		return err == nil && c.Status == receipt.StatusSucceeded && c.Evidence == "receipt"
	})
	// With --wait: follows the polling to the receipt.
	req = started()
	r = run(t, l.env, "resume", l.minion, req, "--wait", "--interval", "50ms")
	must(t, r, 0)
	if s := response(t, oneLine(t, r.stdout)); s["status"] != "succeeded" || s["passed"] != 3.0 {
		t.Fatalf("resume --wait: %s", r)
	}
	if n := l.sim.PublicationCount("oduflow_job.run", ""); n != 2 {
		t.Fatalf("runs published: %d", n)
	}
	// Nothing is inherited: the workers wrote to the state directory's private log.
	if fi, err := os.Stat(filepath.Join(dir, "worker.log")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("worker log: %v %v", fi, err)
	}
}
