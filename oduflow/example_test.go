package oduflow_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/oduflow/oduflow-go/oduflow"
	"github.com/oduflow/oduflow-go/oduflow/oduflowtest/fakeminion"
	"github.com/oduflow/oduflow-go/profiles"
	"github.com/oduflow/oduflow-go/receipt"
	"github.com/oduflow/oduflow-go/salt"
	"github.com/oduflow/oduflow-go/salt/salttest"
)

// Example runs the whole flow against the built-in Salt master simulator: Ping, Start, Status until final,
// and a repeated Start that returns the same JID without publishing again.
func Example() {
	ctx := context.Background()
	tmp, _ := os.MkdirTemp("", "oduflow-example-")
	defer func() { _ = os.RemoveAll(tmp) }()

	_ = os.Mkdir(filepath.Join(tmp, "master"), 0o700)
	sim, err := salttest.Start(ctx, salttest.WithDir(filepath.Join(tmp, "master")))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer func() { _ = sim.Close() }()
	const minion = "client-5b2f8c1e-3c4d-4e5f-8a9b-0c1d2e3f4a5b"
	m := fakeminion.NewModel(minion,
		fakeminion.WithResult(receipt.ProfileConfigure, fakeminion.Result{Status: receipt.StatusSucceeded, Passed: 3, Total: 3}))
	_ = fakeminion.Add(sim, m) // the master accepts the minion's key: its proofs verify against it

	client, _ := salt.NewClient(sim.Addr(), salt.WithAuth(salt.UserKey("root", sim.KeyFile())))
	defer func() { _ = client.Close() }()
	d, err := oduflow.New(client, oduflow.SaltEvents(sim.EventsAddr()),
		oduflow.WithClaimDir(filepath.Join(tmp, "claims")),
		oduflow.WithPKIDir(sim.PKIDir()),
		oduflow.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer func() { _ = d.Close(context.Background()) }() // drains what is still in flight

	ready, _ := d.Ping(ctx, minion)
	fmt.Println("ready:", ready.Ready(), "protocol:", ready.Protocol)

	request := "0d4c1f7e-9a2b-4c3d-8e5f-6a7b8c9d0e1f"
	first, _ := d.Start(ctx, minion, request, receipt.ProfileConfigure)
	fmt.Println("start:", first.Status)
	resp := first
	for r, err := range d.Watch(ctx, minion, request, receipt.ProfileConfigure) { // each change, until succeeded or failed
		if err != nil {
			break
		}
		resp = r
	}
	fmt.Println("status:", resp.Status, resp.Passed, "/", resp.Total)
	again, _ := d.Start(ctx, minion, request, receipt.ProfileConfigure)
	fmt.Println("same jid:", *again.JID == *first.JID, "runs published:", sim.PublicationCount("oduflow_job.run", ""))
	// Output:
	// ready: true protocol: 1
	// start: running
	// status: succeeded 3 / 3
	// same jid: true runs published: 1
}

// Example_profileTable is the README's tour: a fleet named by host, with a profile table of its own
// (an ordered sls list, and the highstate) held by the dispatcher (WithProfiles) and by the minion (its
// oduflow_profiles config; here the fake minion's WithProfileTable). No caller names a state: a request
// names a profile, the table says what it applies.
func Example_profileTable() {
	ctx := context.Background()
	tmp, _ := os.MkdirTemp("", "oduflow-example-")
	defer func() { _ = os.RemoveAll(tmp) }()
	_ = os.Mkdir(filepath.Join(tmp, "master"), 0o700)
	sim, err := salttest.Start(ctx, salttest.WithDir(filepath.Join(tmp, "master")))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer func() { _ = sim.Close() }()

	// In production: profiles.LoadTable(ctx, "/etc/oduflow/profiles.yaml") (ODUFLOW_PROFILES).
	table, err := profiles.ParseTable([]byte(`profiles:
  webserver: {sls: [roles.webserver, roles.monitoring]}   # state.apply roles.webserver,roles.monitoring
  full: {highstate: true}                                  # state.apply: the top file
minion_ids: salt                                           # any Salt minion id
`), "profiles.yaml")
	if err != nil {
		fmt.Println(err)
		return
	}
	const minion = "web01.example.com"
	m := fakeminion.NewModel(minion, fakeminion.WithProfileTable(table),
		fakeminion.WithResult("webserver", fakeminion.Result{Status: receipt.StatusSucceeded, Passed: 4, Total: 4}))
	_ = fakeminion.Add(sim, m)

	client, _ := salt.NewClient(sim.Addr(), salt.WithAuth(salt.UserKey("root", sim.KeyFile())))
	defer func() { _ = client.Close() }()
	d, err := oduflow.New(client, oduflow.SaltEvents(sim.EventsAddr()),
		oduflow.WithProfiles(table),
		oduflow.WithClaimDir(filepath.Join(tmp, "claims")),
		oduflow.WithPKIDir(sim.PKIDir()),
		oduflow.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer func() { _ = d.Close(context.Background()) }()

	ready, _ := d.Ping(ctx, minion)
	fmt.Println("ready:", ready.Ready(), "same table:", ready.ProfileTable)
	for _, profile := range []receipt.Profile{"webserver", "full"} {
		request := receipt.NewRequestID()
		resp, err := d.Start(ctx, minion, request, profile)
		for r, werr := range d.Watch(ctx, minion, request, profile) { // each change, until succeeded or failed
			if resp, err = r, werr; werr != nil {
				break
			}
		}
		fmt.Println(profile, resp.Status, resp.Passed, "/", resp.Total, err)
	}
	_, err = d.Start(ctx, minion, receipt.NewRequestID(), receipt.ProfileConfigure)
	fmt.Println("configure:", errors.Is(err, receipt.ErrUnknownProfile))
	// Output:
	// ready: true same table: true
	// webserver succeeded 4 / 4 <nil>
	// full succeeded 1 / 1 <nil>
	// configure: true
}
