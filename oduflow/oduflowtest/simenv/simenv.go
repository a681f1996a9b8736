package simenv

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/oduflow/oduflow-go/oduflow"
	"github.com/oduflow/oduflow-go/oduflow/oduflowtest/fakeminion"
	"github.com/oduflow/oduflow-go/receipt"
	"github.com/oduflow/oduflow-go/salt"
	"github.com/oduflow/oduflow-go/salt/salttest"
)

// Env is a running simulator and the test it belongs to.
type Env struct {
	t   testing.TB
	sim *salttest.Master
}

// Start starts the simulator in a fresh directory; the test's Cleanup stops it.
func Start(t testing.TB, opts ...salttest.Option) *Env {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "master")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	sim, err := salttest.Start(context.Background(), append([]salttest.Option{salttest.WithDir(dir)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sim.Close() })
	return &Env{t: t, sim: sim}
}

// Master is the simulator (its addresses, publications, fault switches).
func (e *Env) Master() *salttest.Master { return e.sim }

// AddMinion adds a fake minion, client-<new uuid>, with its key accepted; its configure runs succeed 3/3
// unless opts say otherwise.
func (e *Env) AddMinion(opts ...fakeminion.ModelOption) *fakeminion.Model {
	e.t.Helper()
	return e.AddMinionNamed("client-"+uuid.NewString(), opts...)
}

// AddMinionNamed is AddMinion with the minion id given: a host name such as web01.example.com for a
// fleet whose profile table says minion_ids: salt (give it the table with fakeminion.WithProfileTable,
// and its results with fakeminion.WithResult of the table's profiles).
func (e *Env) AddMinionNamed(id string, opts ...fakeminion.ModelOption) *fakeminion.Model {
	e.t.Helper()
	opts = append([]fakeminion.ModelOption{fakeminion.WithResult(receipt.ProfileConfigure,
		fakeminion.Result{Status: receipt.StatusSucceeded, Passed: 3, Total: 3})}, opts...)
	m := fakeminion.NewModel(id, opts...)
	if err := fakeminion.Add(e.sim, m); err != nil {
		e.t.Fatal(err)
	}
	return m
}

// Client is a Client on the simulator (user key root); opts come after that, so a test can shorten its
// timeouts: salt.WithRequestTimeout(300*time.Millisecond) makes a lost reply cost 300 ms, not the 60 s
// default. The test's Cleanup closes it.
func (e *Env) Client(opts ...salt.ClientOption) *salt.Client {
	e.t.Helper()
	client, err := salt.NewClient(e.sim.Addr(), append([]salt.ClientOption{salt.WithAuth(salt.UserKey("root", e.sim.KeyFile()))}, opts...)...)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { _ = client.Close() })
	return client
}

// Dispatcher is a Dispatcher on the simulator (a Client of its own, user key root) with Timers, a fresh
// claim directory, the simulator's pki directory and a discarding logger; opts come after those, so
// they override them. DispatcherOn takes the Client (and so its options) from the caller.
func (e *Env) Dispatcher(opts ...oduflow.Option) *oduflow.Dispatcher {
	e.t.Helper()
	return e.DispatcherOn(e.Client(), opts...)
}

// DispatcherOn is Dispatcher on a Client of the caller's (Client with options of the test's own).
func (e *Env) DispatcherOn(client *salt.Client, opts ...oduflow.Option) *oduflow.Dispatcher {
	e.t.Helper()
	opts = append([]oduflow.Option{oduflow.WithTimers(Timers()),
		oduflow.WithClaimDir(filepath.Join(e.t.TempDir(), "claims")), oduflow.WithPKIDir(e.sim.PKIDir()),
		oduflow.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))}, opts...)
	d, err := oduflow.New(client, oduflow.SaltEvents(e.sim.EventsAddr()), opts...)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = d.Close(ctx)
	})
	return d
}

// WaitFinal watches the request (Dispatcher.Watch) until the request's status is final for now: succeeded, failed or unknown (20 s
// at most). unknown is not the end of a request: a verified receipt that arrives later (the worker still
// listens and polls through its window, and Resume polls again) turns it into succeeded or failed, so a
// test that asserts a request's outcome waits with WaitVerified instead.
func WaitFinal(t testing.TB, d *oduflow.Dispatcher, p receipt.Profile, minion, request string) oduflow.Response {
	t.Helper()
	return wait(t, d, p, minion, request, func(s receipt.Status) bool { return s.Terminal() || s == receipt.StatusUnknown }, "final")
}

// WaitVerified watches the request until the request is succeeded or failed: a verified terminal status, which
// no later event changes (20 s at most; a request still unknown then fails the test).
func WaitVerified(t testing.TB, d *oduflow.Dispatcher, p receipt.Profile, minion, request string) oduflow.Response {
	t.Helper()
	return wait(t, d, p, minion, request, receipt.Status.Terminal, "verified (succeeded or failed)")
}

func wait(t testing.TB, d *oduflow.Dispatcher, p receipt.Profile, minion, request string, done func(receipt.Status) bool, what string) oduflow.Response {
	t.Helper()
	// Dispatcher.Watch wakes on each claim write: no polling, and a failing test ends at the deadline.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var last oduflow.Response
	for r, err := range d.Watch(ctx, minion, request, p) {
		if err != nil {
			t.Fatalf("request %s not %s (last %v): %v", request, what, last, err)
		}
		if last = r; done(r.Status) {
			return r
		}
	}
	t.Fatalf("request %s: the watch ended at %v, not %s", request, last, what)
	return last
}

// Timers are short windows (an execution wait of 8 s, a lease wait and call timeout of 2 s), so a test
// that goes wrong ends in seconds.
func Timers() oduflow.Timers {
	t := oduflow.DefaultTimers()
	t.ExecutionWait, t.HardDeadline, t.StatusExpiry = 8*time.Second, 9*time.Second, 10*time.Second
	t.LeaseWait, t.PollBudget, t.CallTimeout = 2*time.Second, 16, 2*time.Second
	return t
}

// EmitRequestEvents calls h with the events of one dispatched configure request of minion that succeeds
// (start, capability check, the worker's steps, publication, proof, outcome, durations), in the order a
// worker emits them for a minion whose module does not sign its run's return (the proof is an
// oduflow_job.attest call; a signing module's request has neither that publication nor "proof"). A nil
// hook in h is skipped, as the dispatcher skips it.
func EmitRequestEvents(ctx context.Context, h oduflow.Hooks, minion string) {
	ref := oduflow.RequestRef{Minion: minion, RequestID: uuid.NewString(), Profile: receipt.ProfileConfigure,
		JID: "20261202003000000000"}
	step := func(s string) {
		if h.Step != nil {
			h.Step(ctx, ref, s)
		}
	}
	observe := func(what string, d time.Duration) {
		if h.Observe != nil {
			h.Observe(ctx, ref, what, d)
		}
	}
	published := func(r oduflow.RequestRef, fun string) {
		if h.Published != nil {
			h.Published(ctx, r, fun, "ok")
		}
	}
	if h.Started != nil {
		h.Started(ctx, ref, true)
	}
	observe("start", time.Millisecond)
	step("claimed")
	published(oduflow.RequestRef{}, "oduflow_job.capabilities")
	observe("capabilities", time.Millisecond)
	step("lease")
	step("dispatch_recorded")
	step("publish_sending")
	published(ref, "oduflow_job.run")
	observe("publish", time.Millisecond)
	step("publish_replied")
	published(ref, "oduflow_job.attest")
	observe("proof", time.Millisecond)
	step("returned")
	if h.Outcome != nil {
		h.Outcome(ctx, ref, receipt.StatusSucceeded, "")
	}
	step("committed")
	observe("dispatch_to_final", 10*time.Millisecond)
	observe("status", time.Millisecond)
}
