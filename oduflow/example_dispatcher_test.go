package oduflow_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/oduflow/oduflow-go/oduflow"
	"github.com/oduflow/oduflow-go/oduflow/catalog"
	"github.com/oduflow/oduflow-go/oduflow/claims"
	"github.com/oduflow/oduflow-go/oduflow/oduflowtest/fakeminion"
	"github.com/oduflow/oduflow-go/receipt"
	"github.com/oduflow/oduflow-go/salt"
	"github.com/oduflow/oduflow-go/salt/salttest"
)

// exampleMinion is the client minion of the examples.
const exampleMinion = "client-5b2f8c1e-3c4d-4e5f-8a9b-0c1d2e3f4a5b"

// exampleSetup is what every example runs against: the built-in Salt master simulator on real sockets,
// one fake minion (the model), and a Dispatcher with its claims in a temporary directory.
type exampleSetup struct {
	d     *oduflow.Dispatcher
	sim   *salttest.Master
	dir   string
	close func()
}

// startExample starts the simulator with model as its one accepted minion and a Dispatcher on it.
func startExample(model *fakeminion.Model, opts ...oduflow.Option) (*exampleSetup, error) {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "oduflow-example-")
	if err != nil {
		return nil, err
	}
	var closers []func()
	closeAll := func() {
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i]()
		}
	}
	closers = append(closers, func() { _ = os.RemoveAll(dir) })
	_ = os.Mkdir(filepath.Join(dir, "master"), 0o700)
	sim, err := salttest.Start(ctx, salttest.WithDir(filepath.Join(dir, "master")))
	if err != nil {
		closeAll()
		return nil, err
	}
	closers = append(closers, func() { _ = sim.Close() })
	if err := fakeminion.Add(sim, model); err != nil { // the master accepts the minion's key
		closeAll()
		return nil, err
	}
	client, err := salt.NewClient(sim.Addr(), salt.WithAuth(salt.UserKey("root", sim.KeyFile())))
	if err != nil {
		closeAll()
		return nil, err
	}
	closers = append(closers, func() { _ = client.Close() })
	opts = append([]oduflow.Option{oduflow.WithClaimDir(filepath.Join(dir, "claims")),
		oduflow.WithPKIDir(sim.PKIDir()), oduflow.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))}, opts...)
	d, err := oduflow.New(client, oduflow.SaltEvents(sim.EventsAddr()), opts...)
	if err != nil {
		closeAll()
		return nil, err
	}
	closers = append(closers, func() { _ = d.Close(context.Background()) }) // drains: the examples wait for their requests
	return &exampleSetup{d: d, sim: sim, dir: dir, close: closeAll}, nil
}

// shortWindow is a 1.5 s execution window with 3 status polls, so that a run the minion holds ends
// unknown quickly.
func shortWindow() oduflow.Option {
	t := oduflow.DefaultTimers()
	t.ExecutionWait, t.HardDeadline, t.StatusExpiry = 1500*time.Millisecond, 9*time.Second, 10*time.Second
	t.PollBudget, t.LeaseWait, t.CallTimeout = 3, 2*time.Second, 2*time.Second
	return oduflow.WithTimers(t)
}

// Start claims a request durably and launches its worker, which publishes oduflow_job.run once. A
// repeated Start of the same request id answers its current status and never publishes again; a
// malformed id is refused before anything is written.
func ExampleDispatcher_Start() {
	ctx := context.Background()
	m := fakeminion.NewModel(exampleMinion,
		fakeminion.WithResult(receipt.ProfileConfigure, fakeminion.Result{Status: receipt.StatusSucceeded, Passed: 3, Total: 3}))
	ex, err := startExample(m)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer ex.close()
	d := ex.d

	request := receipt.NewRequestID()
	first, err := d.Start(ctx, exampleMinion, request, receipt.ProfileConfigure)
	fmt.Println("start:", first.Status, err, "jid preassigned:", first.JID != nil)
	_ = d.Wait(ctx) // the in-process worker has committed its final result

	again, _ := d.Start(ctx, exampleMinion, request, receipt.ProfileConfigure)
	fmt.Println("again:", again.Status, again.Passed, "/", again.Total, "same jid:", *again.JID == *first.JID,
		"runs published:", ex.sim.PublicationCount("oduflow_job.run", ""))

	_, err = d.Start(ctx, exampleMinion, "not-a-request-id", receipt.ProfileConfigure)
	fmt.Println("malformed id:", errors.Is(err, claims.ErrInvalidInput))
	// Output:
	// start: running <nil> jid preassigned: true
	// again: succeeded 3 / 3 same jid: true runs published: 1
	// malformed id: true
}

// Status answers by the status rules without publishing anything: not_started before any claim, running
// while the worker holds the request, the recorded result once final. A request id is bound to one
// profile and one minion.
func ExampleDispatcher_Status() {
	ctx := context.Background()
	m := fakeminion.NewModel(exampleMinion, fakeminion.WithHold(),
		fakeminion.WithResult(receipt.ProfileConfigure, fakeminion.Result{Status: receipt.StatusSucceeded, Passed: 2, Total: 2}))
	ex, err := startExample(m)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer ex.close()
	d := ex.d

	request := receipt.NewRequestID()
	resp, _ := d.Status(ctx, exampleMinion, request, receipt.ProfileConfigure)
	fmt.Println("before start:", resp.Status, "jid:", resp.JID)

	_, _ = d.Start(ctx, exampleMinion, request, receipt.ProfileConfigure)
	resp, _ = d.Status(ctx, exampleMinion, request, receipt.ProfileConfigure)
	fmt.Println("while the minion runs it:", resp.Status)

	m.Release() // the minion finishes the run
	_ = d.Wait(ctx)
	resp, _ = d.Status(ctx, exampleMinion, request, receipt.ProfileConfigure)
	fmt.Println("final:", resp.Status, resp.Passed, "/", resp.Total)

	_, err = d.Status(ctx, exampleMinion, request, receipt.ProfileProduction)
	fmt.Println("through another profile:", errors.Is(err, oduflow.ErrMismatch))
	// Output:
	// before start: not_started jid: <nil>
	// while the minion runs it: running
	// final: succeeded 2 / 2
	// through another profile: true
}

// Reconcile resolves an unknown request, and so releases the quarantine it put on its client. Assert
// records an operator's outcome (never counted as a minion receipt); FromMinion fetches the minion's own
// signed receipt, and replaces an assertion by it.
func ExampleDispatcher_Reconcile() {
	ctx := context.Background()
	m := fakeminion.NewModel(exampleMinion, fakeminion.WithHold(),
		fakeminion.WithResult(receipt.ProfileConfigure, fakeminion.Result{Status: receipt.StatusSucceeded, Passed: 1, Total: 1}))
	ex, err := startExample(m, shortWindow())
	if err != nil {
		fmt.Println(err)
		return
	}
	defer ex.close()
	d := ex.d

	request := receipt.NewRequestID()
	_, _ = d.Start(ctx, exampleMinion, request, receipt.ProfileConfigure)
	_ = d.Wait(ctx) // the minion holds the run past the window: no trustworthy return
	resp, _ := d.Status(ctx, exampleMinion, request, receipt.ProfileConfigure)
	q, _ := d.Quarantine(ctx, exampleMinion)
	fmt.Println("after the window:", resp.Status, "quarantined:", len(q))

	_, err = d.Reconcile(ctx, exampleMinion, request, oduflow.FromMinion{})
	fmt.Println("from the minion while it runs:", errors.Is(err, oduflow.ErrUnresolved))

	resp, _ = d.Reconcile(ctx, exampleMinion, request,
		oduflow.Assert{Outcome: receipt.StatusFailed, Total: 1, Who: "ops", Why: "checked on the server"})
	c, _ := d.Lookup(ctx, exampleMinion, request)
	q, _ = d.Quarantine(ctx, exampleMinion)
	fmt.Println("asserted:", resp.Status, c.Phase, c.Evidence, "quarantined:", len(q))

	m.Release() // the minion finishes the run and keeps its receipt
	for i := 0; i < 100; i++ {
		if resp, err = d.Reconcile(ctx, exampleMinion, request, oduflow.FromMinion{}); !errors.Is(err, oduflow.ErrUnresolved) {
			break
		}
		// an operator's retry: the minion finishes its run in its own time
		time.Sleep(50 * time.Millisecond)
	}
	c, _ = d.Lookup(ctx, exampleMinion, request)
	fmt.Println("from the minion:", resp.Status, resp.Passed, "/", resp.Total, c.Evidence, "asserted by:", c.AssertedBy)
	// Output:
	// after the window: unknown quarantined: 1
	// from the minion while it runs: true
	// asserted: failed asserted asserted quarantined: 0
	// from the minion: succeeded 1 / 1 reconciled asserted by: ops
}

// Resume polls an unknown request again for another window; the minion's verified receipt replaces
// unknown and releases the quarantine. Nothing is published again.
func ExampleDispatcher_Resume() {
	ctx := context.Background()
	m := fakeminion.NewModel(exampleMinion, fakeminion.WithHold(),
		fakeminion.WithResult(receipt.ProfileConfigure, fakeminion.Result{Status: receipt.StatusSucceeded, Passed: 4, Total: 4}))
	ex, err := startExample(m, shortWindow())
	if err != nil {
		fmt.Println(err)
		return
	}
	defer ex.close()
	d := ex.d

	request := receipt.NewRequestID()
	_, _ = d.Start(ctx, exampleMinion, request, receipt.ProfileConfigure)
	_ = d.Wait(ctx)
	resp, _ := d.Status(ctx, exampleMinion, request, receipt.ProfileConfigure)
	fmt.Println("after the window:", resp.Status)

	m.Release()
	_, err = d.Resume(ctx, exampleMinion, request) // polls in the background (Wait follows it)
	fmt.Println("resume:", err)
	_ = d.Wait(ctx)
	resp, _ = d.Status(ctx, exampleMinion, request, receipt.ProfileConfigure)
	q, _ := d.Quarantine(ctx, exampleMinion)
	fmt.Println("after resume:", resp.Status, resp.Passed, "/", resp.Total, "quarantined:", len(q),
		"runs published:", ex.sim.PublicationCount("oduflow_job.run", ""))
	// Output:
	// after the window: unknown
	// resume: <nil>
	// after resume: succeeded 4 / 4 quarantined: 0 runs published: 1
}

// CustomStart applies a custom state definition from the catalog to a server it is assigned to, once
// the server's initial configuration succeeded. The execution freezes the definition's compiled
// source; a second Apply while it succeeded reuses it instead of running again, Apply Again runs anew.
func ExampleDispatcher_CustomStart() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "oduflow-example-catalog-")
	defer func() { _ = os.RemoveAll(dir) }()
	cat, err := catalog.Open(filepath.Join(dir, "catalog"), catalog.WithCreate())
	if err != nil {
		fmt.Println(err)
		return
	}
	def, err := cat.CreateDefinition(ctx, "acme", "motd",
		[]byte("motd:\n  test.succeed_without_changes:\n    - name: hello\n"))
	if err != nil {
		fmt.Println(err)
		return
	}
	_, _ = cat.Assign(ctx, def.ID, exampleMinion, "acme")

	m := fakeminion.NewModel(exampleMinion,
		fakeminion.WithResult(receipt.ProfileCustom, fakeminion.Result{Status: receipt.StatusSucceeded, Passed: 1, Total: 1}))
	ex, err := startExample(m, oduflow.WithCustomCatalog(cat))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer ex.close()
	d := ex.d

	_, err = d.CustomStart(ctx, exampleMinion, receipt.NewRequestID(), def.ID, catalog.ModeApply)
	fmt.Println("before the initial configuration:", errors.Is(err, oduflow.ErrInitialConfigurationMissing))
	_, _ = d.Start(ctx, exampleMinion, receipt.NewRequestID(), receipt.ProfileConfigure)
	_ = d.Wait(ctx)

	request := receipt.NewRequestID()
	resp, err := d.CustomStart(ctx, exampleMinion, request, def.ID, catalog.ModeApply)
	fmt.Println("apply:", resp.Status, err)
	_ = d.Wait(ctx)
	resp, _ = d.CustomStatus(ctx, exampleMinion, request)
	fmt.Println("status:", resp.Status, resp.Passed, "/", resp.Total)

	reused, _ := d.CustomStart(ctx, exampleMinion, receipt.NewRequestID(), def.ID, catalog.ModeApply)
	fmt.Println("apply again by mistake:", reused.Status, reused.Reused, reused.ExecutionID == request)
	again, _ := d.CustomStart(ctx, exampleMinion, receipt.NewRequestID(), def.ID, catalog.ModeApplyAgain)
	_ = d.Wait(ctx)
	fmt.Println("apply again:", again.Reused == "", "custom runs published:", ex.sim.PublicationCount("oduflow_job.run", "")-1)
	// Output:
	// before the initial configuration: true
	// apply: running <nil>
	// status: succeeded 1 / 1
	// apply again by mistake: succeeded reuse_succeeded true
	// apply again: true custom runs published: 2
}
