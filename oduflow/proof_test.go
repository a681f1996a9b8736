package oduflow

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/oduflow/oduflow-go/oduflow/claims"
	"github.com/oduflow/oduflow-go/oduflow/oduflowtest/fakeminion"
	"github.com/oduflow/oduflow-go/receipt"
	receiptproof "github.com/oduflow/oduflow-go/receipt/proof"
	"github.com/oduflow/oduflow-go/salt/salttest"
)

func newRecHooks() *recHooks {
	return &recHooks{pubs: map[string]int{}, outcomes: map[receipt.Status]int{}, observed: map[string]int{},
		unverified: map[string]int{}}
}

func (h *recHooks) unverifiedCount(reason string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.unverified[reason]
}

// waitPhase waits until the claim reaches phase p and returns it.
func waitPhase(t *testing.T, d *Dispatcher, request string, p claims.Phase) *claims.Claim {
	t.Helper()
	var c *claims.Claim
	if !waitUntil(10*time.Second, func() bool {
		got, err := d.store.Get(context.Background(), request)
		c = got
		return err == nil && got.Phase == p
	}) {
		t.Fatalf("request %s never reached %s (%+v)", request, p, c)
	}
	return c
}

// forgedReceipt is a succeeded receipt bound to c: exactly what the real minion would return.
func forgedReceipt(c *claims.Claim) receipt.Receipt {
	return receipt.Receipt{Protocol: 1, MinionID: c.MinionID, RequestID: c.RequestID, JID: c.JID,
		Profile: c.Profile, Status: receipt.StatusSucceeded, Passed: 7, Total: 7}
}

// realReturnData is the data of a master-handled return of minion id (what a batched _minion_event can
// reproduce byte for byte).
func realReturnData(id, jid string, ret any) map[string]any {
	return map[string]any{"cmd": "_return", "id": id, "success": true, "return": ret, "retcode": int64(0),
		"jid": jid, "fun": funRun, "fun_args": []any{}, "user": "root"}
}

// forgeryTarget is a request dispatched to a held minion whose real result is failed, 1 of 2: the forged
// return tests fire their forgeries at its JID, then release the minion and expect that result.
type forgeryTarget struct {
	e   *simEnv
	m   *fakeminion.Model
	h   *recHooks
	d   *Dispatcher
	req string
	c   *claims.Claim // the claim once dispatched
}

func startForgeryTarget(t *testing.T) forgeryTarget {
	t.Helper()
	e := startSim(t)
	m := e.addMinion(fakeminion.WithHold(),
		fakeminion.WithResult(receipt.ProfileConfigure, fakeminion.Result{Status: receipt.StatusFailed, Passed: 1, Total: 2}))
	h := newRecHooks()
	d := e.dispatcher(WithHooks(h.hooks()))
	req := uuid.NewString()
	mustStart(t, d, receipt.ProfileConfigure, m.ID(), req)
	return forgeryTarget{e: e, m: m, h: h, d: d, req: req, c: waitPhase(t, d, req, claims.PhaseDispatched)}
}

func TestForgedReturnsAreNeverEvidence(t *testing.T) {
	t.Parallel()
	ft := startForgeryTarget(t)
	e, m, h, d, req, c := ft.e, ft.m, ft.h, ft.d, ft.req, ft.c
	if c.MinionKeySHA256 == "" || c.MinionKeySHA256 != keyFingerprint(&m.Key().PublicKey) {
		t.Fatalf("fingerprint not pinned at preflight: %q", c.MinionKeySHA256)
	}
	forged := fakeminion.ReceiptValue(forgedReceipt(c))
	other := newMinionID()
	tag := "salt/job/" + c.JID + "/ret/" + m.ID()
	// 1. the batched _minion_event form: the data exactly as the sender wrote it, a perfect copy of a
	// real return (it asks for the proof, which says running: unproven)
	// 2. the plain _minion_event form: the master fires the whole load, cmd _minion_event, id of the sender
	ev := realReturnData(m.ID(), c.JID, forged)
	ev["cmd"], ev["id"], ev["tag"], ev["data"] = "_minion_event", other, tag, map[string]any{}
	// 3. another minion's identity on its own tag, 4. a data id that is not the tag's minion
	idMismatch := realReturnData(other, c.JID, forged)
	for _, f := range []struct {
		tag  string
		data map[string]any
	}{
		{tag, realReturnData(m.ID(), c.JID, forged)},
		{tag, ev},
		{"salt/job/" + c.JID + "/ret/" + other, realReturnData(other, c.JID, forged)},
		{tag, idMismatch},
	} {
		if err := e.sim.FireEvent(f.tag, f.data); err != nil {
			t.Fatal(err)
		}
	}
	if !waitUntil(3*time.Second, func() bool {
		return h.unverifiedCount(unverifiedMinionEvent) > 0 && h.unverifiedCount(unverifiedWrongMinion) > 0 &&
			h.unverifiedCount(unverifiedIDMismatch) > 0 && h.unverifiedCount(unverifiedUnproven) > 0
	}) {
		t.Fatalf("unverified events not all counted: %v", h.unverified)
	}
	if cur := mustClaim(t, d, req); cur.Phase.Final() {
		t.Fatalf("a forged return was accepted: %+v", cur)
	}
	if n := m.Calls(funAttest); n != 1 {
		t.Fatalf("forged events asked for %d proofs; at most one per poll interval", n)
	}
	m.Release()
	r := waitFinal(t, d, receipt.ProfileConfigure, m.ID(), req)
	if r.Status != receipt.StatusFailed || r.Passed != 1 || r.Total != 2 {
		t.Fatalf("the real result did not land: %+v", r)
	}
	if cur := mustClaim(t, d, req); cur.Evidence != evidenceReceipt {
		t.Fatalf("evidence %q", cur.Evidence)
	}
}

// racingMinion answers oduflow_job.attest only after a forger fired a forged answer on the same JID.
type racingMinion struct {
	m     *fakeminion.Model
	sim   *salttest.Master
	forge func(job salttest.Job) any
	fired atomic.Int32
}

func (r *racingMinion) handle(ctx context.Context, job salttest.Job) (any, int) {
	if job.Fun == funAttest {
		data := realReturnData(r.m.ID(), job.JID, r.forge(job))
		data["fun"] = funAttest
		if err := r.sim.FireEvent("salt/job/"+job.JID+"/ret/"+r.m.ID(), data); err == nil {
			r.fired.Add(1)
		}
		// the forgery is on the bus first: FireEvent has queued it, and the real return, fired when this
		// handler returns, is queued behind it on the same bus
	}
	return r.m.Handle(ctx, job)
}

func TestForgedProofsAreRefused(t *testing.T) {
	t.Parallel()
	otherKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]func(m *fakeminion.Model, c receipt.Receipt, nonce string) any{
		// the real minion's signature, made for another request's (or an earlier poll's) nonce
		"replayed proof": func(m *fakeminion.Model, c receipt.Receipt, _ string) any {
			p, _ := receiptproof.Sign(m.Key(), strings.Repeat("ab", 32), c)
			return p
		},
		// the right nonce, signed by another minion's key
		"wrong key": func(_ *fakeminion.Model, c receipt.Receipt, nonce string) any {
			p, _ := receiptproof.Sign(otherKey, nonce, c)
			return p
		},
		// a proof that claims SHA-1 (what salt.crypt.sign_message makes)
		"alg mismatch": func(m *fakeminion.Model, c receipt.Receipt, nonce string) any {
			p, _ := receiptproof.Sign(m.Key(), nonce, c)
			p["alg"] = "rsa-pkcs1v15-sha1"
			return p
		},
		"bare receipt": func(_ *fakeminion.Model, c receipt.Receipt, _ string) any { return fakeminion.ReceiptValue(c) },
	}
	for name, forge := range cases {
		t.Run(name, func(t *testing.T) {
			e := startSim(t)
			// a module without signed run returns: every receipt is proven by attest, which the forger races
			m := fakeminion.NewModel(newMinionID(), fakeminion.WithResult(receipt.ProfileConfigure,
				fakeminion.Result{Status: receipt.StatusFailed, Passed: 1, Total: 2}), fakeminion.WithoutRunProof())
			e.accept(m)
			rm := &racingMinion{m: m, sim: e.sim}
			rm.forge = func(job salttest.Job) any {
				nonce, _ := job.Args[3].(string)
				req, _ := job.Args[0].(string)
				jid, _ := job.Args[1].(string)
				return forge(m, receipt.Receipt{Protocol: 1, MinionID: m.ID(), RequestID: req, JID: jid,
					Profile: receipt.ProfileConfigure, Status: receipt.StatusSucceeded, Passed: 9, Total: 9}, nonce)
			}
			e.sim.AddMinion(m.ID(), rm.handle)
			h := newRecHooks()
			d := e.dispatcher(WithHooks(h.hooks()))
			req := uuid.NewString()
			mustStart(t, d, receipt.ProfileConfigure, m.ID(), req)
			r := waitFinal(t, d, receipt.ProfileConfigure, m.ID(), req)
			if r.Status != receipt.StatusFailed || r.Passed != 1 || r.Total != 2 {
				t.Fatalf("forged proof accepted: %+v", r)
			}
			if rm.fired.Load() == 0 || h.unverifiedCount(unverifiedProof) == 0 {
				t.Fatalf("forgery not exercised: fired %d hooks %v", rm.fired.Load(), h.unverified)
			}
		})
	}
}

func TestForgedFloodDoesNotSpendPollBudget(t *testing.T) {
	e := startSim(t)
	m := e.addMinion(fakeminion.WithHold())
	h := newRecHooks()
	d := e.dispatcher(WithHooks(h.hooks()))
	req := uuid.NewString()
	mustStart(t, d, receipt.ProfileConfigure, m.ID(), req)
	c := waitPhase(t, d, req, claims.PhaseDispatched)
	tag := "salt/job/" + c.JID + "/ret/" + m.ID()
	forged := fakeminion.ReceiptValue(forgedReceipt(c))
	var wg sync.WaitGroup
	stop := make(chan struct{})
	floodStart := time.Now()
	wg.Add(1)
	go func() { // a forger floods the bus for a while, in every form
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			data := realReturnData(m.ID(), c.JID, forged)
			if i%2 == 1 {
				data["cmd"] = "_minion_event"
			}
			_ = e.sim.FireEvent(tag, data)
			if i%64 == 63 {
				time.Sleep(time.Millisecond) // as fast as the bus takes them
			}
		}
	}()
	// a window in which the flood must not decide the request while it stays running
	time.Sleep(1500 * time.Millisecond)
	if cur := mustClaim(t, d, req); cur.Phase.Final() {
		t.Fatalf("flood decided the request: %+v", cur)
	}
	m.Release()
	r := waitFinal(t, d, receipt.ProfileConfigure, m.ID(), req)
	elapsed := time.Since(floodStart)
	close(stop)
	wg.Wait()
	if r.Status != receipt.StatusSucceeded || r.Passed != 1 || r.Total != 1 {
		t.Fatalf("the real result did not land: %+v", r)
	}
	polls := e.sim.PublicationCount(funStatus, "")
	proofs := m.Calls(funAttest)
	forgedSeen := h.unverifiedCount(unverifiedMinionEvent) + h.unverifiedCount(unverifiedUnproven)
	// testTimers: 16 polls over 8 s, so one interval is 0.5 s. Per interval a flood can cause at most one
	// early proof and one proof asked for by the next poll, plus the real result's own: the bound follows
	// the time the flood lasted (about 1.5 s here, more on a slow CI machine: 7-8 proofs are usual), never
	// the thousands of forged events.
	interval := testTimers().ExecutionWait / time.Duration(testTimers().PollBudget)
	maxProofs := 2*int(elapsed/interval) + 4
	t.Logf("flood: %d forged events counted in %v, %d status polls, %d proof requests (bound %d)",
		forgedSeen, elapsed.Round(time.Millisecond), polls, proofs, maxProofs)
	if polls >= testTimers().PollBudget/2 || proofs > maxProofs || forgedSeen < 100 {
		t.Fatalf("flood of %d forged events cost %d polls and %d proofs", forgedSeen, polls, proofs)
	}
}

func TestPreflightRequiresProof(t *testing.T) {
	t.Parallel()
	t.Run("module without proof", func(t *testing.T) {
		e := startSim(t)
		m := e.addMinion(fakeminion.WithoutProof())
		d := e.dispatcher()
		req := uuid.NewString()
		mustStart(t, d, receipt.ProfileConfigure, m.ID(), req)
		r := waitFinal(t, d, receipt.ProfileConfigure, m.ID(), req)
		if c := mustClaim(t, d, req); r.Status != receipt.StatusFailed || c.ErrorCode != claims.CodeCapability || m.Runs() != 0 {
			t.Fatalf("%+v %+v runs %d", r, c, m.Runs())
		}
		ready, err := d.Ping(context.Background(), m.ID())
		if err != nil || ready.Proof || ready.Ready() {
			t.Fatalf("ping: %+v %v", ready, err)
		}
	})
	t.Run("no accepted key", func(t *testing.T) {
		e := startSim(t)
		m := fakeminion.NewModel(newMinionID())
		e.sim.AddMinion(m.ID(), m.Handle) // its key is not in the pki dir
		d := e.dispatcher()
		req := uuid.NewString()
		mustStart(t, d, receipt.ProfileConfigure, m.ID(), req)
		waitFinal(t, d, receipt.ProfileConfigure, m.ID(), req)
		if c := mustClaim(t, d, req); c.ErrorCode != claims.CodeMinionKey || m.Runs() != 0 {
			t.Fatalf("%+v runs %d", c, m.Runs())
		}
	})
}

func TestKeyChangedAfterPreflightIsNeverEvidence(t *testing.T) {
	t.Parallel()
	e := startSim(t)
	m := fakeminion.NewModel(newMinionID(), fakeminion.WithHold())
	decoy := fakeminion.NewModel(m.ID()) // the key the master had accepted at preflight
	e.accept(decoy)
	e.sim.AddMinion(m.ID(), m.Handle)
	d := e.dispatcher()
	req := uuid.NewString()
	mustStart(t, d, receipt.ProfileConfigure, m.ID(), req)
	c := waitPhase(t, d, req, claims.PhaseDispatched)
	if c.MinionKeySHA256 != keyFingerprint(&decoy.Key().PublicKey) {
		t.Fatal("the preflight key is not the pinned one")
	}
	// after dispatch the accepted key is replaced by the key the answering minion signs with: without
	// the pin its proofs would verify; with it they are never evidence
	e.accept(m)
	m.Release()
	// a window in which a proof under the wrong key must not count while the request stays live
	time.Sleep(1500 * time.Millisecond)
	if c := mustClaim(t, d, req); c.Phase.Final() && c.Status != receipt.StatusUnknown {
		t.Fatalf("a proof under a key other than the pinned one counted: %+v", c)
	}
}

// TestPollCommitsOnlyFromProof: the path Resume and Reconcile FromMinion share (pollOnce) returns a final
// answer only when the minion's signed answer verifies; a status answer alone never counts.
func TestPollCommitsOnlyFromProof(t *testing.T) {
	t.Parallel()
	e := startSim(t)
	m := e.addMinion()
	d := e.dispatcher()
	req := uuid.NewString()
	mustStart(t, d, receipt.ProfileConfigure, m.ID(), req)
	if r := waitFinal(t, d, receipt.ProfileConfigure, m.ID(), req); r.Status != receipt.StatusSucceeded {
		t.Fatalf("%+v", r)
	}
	c := mustClaim(t, d, req)
	ctx := context.Background()
	if r := d.pollOnce(ctx, c, time.Now().Add(3*time.Second)); r == nil || r.Status != receipt.StatusSucceeded {
		t.Fatalf("proven poll: %+v", r)
	}
	// the same minion, its status answer intact, but no proof: nothing final
	e.sim.AddMinion(m.ID(), func(ctx context.Context, job salttest.Job) (any, int) {
		if job.Fun == funAttest {
			return "'" + funAttest + "' is not available.", 254
		}
		return m.Handle(ctx, job)
	})
	if r := d.pollOnce(ctx, c, time.Now().Add(3*time.Second)); r != nil {
		t.Fatalf("a status answer counted without a proof: %+v", r)
	}
	// a legacy claim without a pin verifies against the accepted key
	e.sim.AddMinion(m.ID(), m.Handle)
	legacy := c.Clone()
	legacy.MinionKeySHA256 = ""
	if r := d.pollOnce(ctx, legacy, time.Now().Add(3*time.Second)); r == nil || r.Status != receipt.StatusSucceeded {
		t.Fatalf("unpinned claim: %+v", r)
	}
	// a claim pinned to another key: never evidence
	pinned := c.Clone()
	pinned.MinionKeySHA256 = strings.Repeat("0", 64)
	if r := d.pollOnce(ctx, pinned, time.Now().Add(3*time.Second)); r != nil {
		t.Fatalf("pinned to another key: %+v", r)
	}
}
