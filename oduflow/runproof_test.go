package oduflow

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/oduflow/oduflow-go/oduflow/catalog"
	"github.com/oduflow/oduflow-go/oduflow/claims"
	"github.com/oduflow/oduflow-go/oduflow/oduflowtest/fakeminion"
	"github.com/oduflow/oduflow-go/receipt"
	receiptproof "github.com/oduflow/oduflow-go/receipt/proof"
	"github.com/oduflow/oduflow-go/salt/salttest"
)

// runNonceOf is the proof_nonce keyword the run publication of jid carried ("" when none), read from
// the simulator's record of what went out.
func runNonceOf(t *testing.T, sim *salttest.Master, jid string) string {
	t.Helper()
	n := ""
	for _, p := range sim.Publications() {
		if p.Fun != funRun || p.JID != jid {
			continue
		}
		for _, a := range p.Args {
			if kw, ok := a.(map[string]any); ok {
				if s, ok := kw["proof_nonce"].(string); ok {
					n = s
				}
			}
		}
	}
	return n
}

// publishedFuns counts the publications that went out, by function.
func publishedFuns(sim *salttest.Master) map[string]int {
	out := map[string]int{}
	for _, p := range sim.Publications() {
		out[p.Fun]++
	}
	return out
}

// TestRunReturnProof: the run's own return, signed by the minion's key over the proof nonce its
// publication carried, commits the final result with no oduflow_job.attest job; anything that is not
// that (a forged or replayed proof, a module that does not sign, a lost return) is never evidence, and the
// worker proves the receipt with attest and a fresh nonce exactly as before.
func TestRunReturnProof(t *testing.T) {
	t.Parallel()

	// (a) A signing minion: two Salt jobs per request (capabilities, run) and no attest.
	t.Run("two jobs, no attest", func(t *testing.T) {
		t.Parallel()
		e := startSim(t)
		m := e.addMinion(fakeminion.WithResult(receipt.ProfileConfigure, fakeminion.Result{Status: receipt.StatusSucceeded, Passed: 4, Total: 4}))
		h := newRecHooks()
		d := e.dispatcher(WithHooks(h.hooks()))
		req := uuid.NewString()
		mustStart(t, d, receipt.ProfileConfigure, m.ID(), req)
		r := waitFinal(t, d, receipt.ProfileConfigure, m.ID(), req)
		c := mustClaim(t, d, req)
		if r.Status != receipt.StatusSucceeded || r.Passed != 4 || c.Evidence != evidenceReceipt {
			t.Fatalf("final %+v, evidence %q", r, c.Evidence)
		}
		pubs := publishedFuns(e.sim)
		if len(pubs) != 2 || pubs[funCapabilities] != 1 || pubs[funRun] != 1 || pubs[funAttest] != 0 || m.Calls(funAttest) != 0 {
			t.Fatalf("publications %v, attest calls %d: want capabilities and run only", pubs, m.Calls(funAttest))
		}
		if receiptproof.ValidateNonce(runNonceOf(t, e.sim, c.JID)) != nil {
			t.Fatal("the run publication carried no valid proof nonce")
		}
		h.mu.Lock()
		unverified := len(h.unverified)
		h.mu.Unlock()
		if unverified != 0 {
			t.Fatalf("%d kinds of unverified events on a clean run", unverified)
		}
	})

	// (b) A forger puts a perfect copy of a real run return on the bus before the real one, its proof
	// signed by another key, signed by the real key over another nonce (a replay), or signed right but
	// for another request: never committed (proof_invalid), the worker asks attest, the real result wins.
	otherKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	forgeries := map[string]func(m *fakeminion.Model, r receipt.Receipt, nonce string) map[string]any{
		"other key": func(_ *fakeminion.Model, r receipt.Receipt, nonce string) map[string]any {
			p, _ := receiptproof.Sign(otherKey, nonce, r)
			return p
		},
		"replayed nonce": func(m *fakeminion.Model, r receipt.Receipt, _ string) map[string]any {
			p, _ := receiptproof.Sign(m.Key(), strings.Repeat("ab", 32), r)
			return p
		},
		"other binding": func(m *fakeminion.Model, r receipt.Receipt, nonce string) map[string]any {
			r.RequestID = uuid.NewString()
			p, _ := receiptproof.Sign(m.Key(), nonce, r)
			return p
		},
	}
	for name, forge := range forgeries {
		t.Run("forged "+name, func(t *testing.T) {
			t.Parallel()
			ft := startForgeryTarget(t)
			e, m, h, d, req, c := ft.e, ft.m, ft.h, ft.d, ft.req, ft.c
			nonce := runNonceOf(t, e.sim, c.JID)
			if receiptproof.ValidateNonce(nonce) != nil {
				t.Fatal("the run publication carried no valid proof nonce")
			}
			forged := forge(m, forgedReceipt(c), nonce)
			if err := e.sim.FireEvent("salt/job/"+c.JID+"/ret/"+m.ID(), realReturnData(m.ID(), c.JID, forged)); err != nil {
				t.Fatal(err)
			}
			if !waitUntil(3*time.Second, func() bool { return h.unverifiedCount(unverifiedProof) > 0 && m.Calls(funAttest) > 0 }) {
				t.Fatalf("the forged run proof was not refused and followed by attest: %v, attest %d", h.unverified, m.Calls(funAttest))
			}
			if cur := mustClaim(t, d, req); cur.Phase.Final() {
				t.Fatalf("a forged run proof was committed: %+v", cur)
			}
			m.Release()
			r := waitFinal(t, d, receipt.ProfileConfigure, m.ID(), req)
			if r.Status != receipt.StatusFailed || r.Passed != 1 || r.Total != 2 {
				t.Fatalf("the real result did not land: %+v", r)
			}
		})
	}

	// (c) A module that returns no proof: one from before signed run returns (no "run_return": the run
	// must carry no nonce, which that module would refuse), or one that advertises it but cannot sign at
	// run time. Both still succeed, proven by attest.
	for name, opt := range map[string]fakeminion.ModelOption{
		"module before signed returns": fakeminion.WithoutRunProof(),
		"module that cannot sign":      fakeminion.WithUnsignedRunReturn(),
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := startSim(t)
			m := e.addMinion(opt)
			d := e.dispatcher()
			req := uuid.NewString()
			mustStart(t, d, receipt.ProfileConfigure, m.ID(), req)
			r := waitFinal(t, d, receipt.ProfileConfigure, m.ID(), req)
			c := mustClaim(t, d, req)
			if r.Status != receipt.StatusSucceeded || c.Evidence != evidenceReceipt || m.Runs() != 1 {
				t.Fatalf("final %+v, claim %+v, runs %d", r, c, m.Runs())
			}
			if pubs := publishedFuns(e.sim); pubs[funAttest] != 1 || pubs[funRun] != 1 {
				t.Fatalf("publications %v: want the run and one attest", pubs)
			}
			hasNonce := runNonceOf(t, e.sim, c.JID) != ""
			if want := name == "module that cannot sign"; hasNonce != want {
				t.Fatalf("run carried a proof nonce: %v, want %v", hasNonce, want)
			}
		})
	}

	// (d) The run's signed return is lost on the bus: the receipt is read back by the status polls and
	// proven by attest, as before.
	t.Run("lost run return", func(t *testing.T) {
		t.Parallel()
		e := startSim(t)
		m := e.addMinion(fakeminion.WithHold())
		d := e.dispatcher()
		req := uuid.NewString()
		mustStart(t, d, receipt.ProfileConfigure, m.ID(), req)
		c := waitPhase(t, d, req, claims.PhaseDispatched)
		e.sim.DropNextReturn(c.JID) // taken when the held run returns
		m.Release()
		r := waitFinal(t, d, receipt.ProfileConfigure, m.ID(), req)
		if r.Status != receipt.StatusSucceeded || m.Runs() != 1 {
			t.Fatalf("final %+v, runs %d", r, m.Runs())
		}
		if pubs := publishedFuns(e.sim); pubs[funAttest] < 1 || pubs[funRun] != 1 {
			t.Fatalf("publications %v: want the run once and its receipt proven by attest", pubs)
		}
	})

	// The custom path publishes its run the same way: a custom execution on a signing minion is proven by
	// its run's own return too (the initial configure as well), with no attest job.
	t.Run("custom execution", func(t *testing.T) {
		t.Parallel()
		e := newCstEnv(t)
		e.minion.signRun.Store(true)
		e.configure()
		def := e.define("acme", cstFail)
		req := receipt.NewRequestID()
		if _, err := e.d.CustomStart(context.Background(), e.minion.id, req, def.ID, catalog.ModeApply); err != nil {
			t.Fatal(err)
		}
		if f := e.final(req); f.Status != receipt.StatusFailed || f.Passed != 1 || f.Total != 2 {
			t.Fatalf("custom run: %+v", f)
		}
		c := e.waitClaimFinal(req)
		if pubs := publishedFuns(e.sim); pubs[funAttest] != 0 || pubs[funRun] != 2 || c.Evidence != evidenceReceipt {
			t.Fatalf("publications %v, evidence %q: want two runs proven by their own returns", pubs, c.Evidence)
		}
		if receiptproof.ValidateNonce(runNonceOf(t, e.sim, c.JID)) != nil {
			t.Fatal("the custom run carried no valid proof nonce")
		}
	})

	// The real module (Python, through the simulator): its signed run return verifies in Go as it is,
	// so its form is byte for byte the one attest signs.
	t.Run("python module", func(t *testing.T) {
		t.Parallel()
		e := startSim(t)
		minion, _ := startPyMinion(t, e, fakeminion.PythonConfig{})
		d := e.dispatcher(pyTimers())
		req := uuid.NewString()
		mustStart(t, d, receipt.ProfileConfigure, minion, req)
		if r := waitFinal(t, d, receipt.ProfileConfigure, minion, req); r.Status != receipt.StatusSucceeded || r.Passed != 3 {
			t.Fatalf("configure: %+v", r)
		}
		if pubs := publishedFuns(e.sim); pubs[funAttest] != 0 || pubs[funRun] != 1 {
			t.Fatalf("publications %v: want no attest", pubs)
		}
	})
}
