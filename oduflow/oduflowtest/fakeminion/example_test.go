package fakeminion_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/oduflow/oduflow-go/oduflow"
	"github.com/oduflow/oduflow-go/oduflow/oduflowtest"
	"github.com/oduflow/oduflow-go/oduflow/oduflowtest/fakeminion"
	"github.com/oduflow/oduflow-go/receipt"
	"github.com/oduflow/oduflow-go/salt"
	"github.com/oduflow/oduflow-go/salt/salttest"
)

// controller stands for a service's own code under test: it configures a client machine through the
// dispatcher and waits for the outcome.
type controller struct{ d *oduflow.Dispatcher }

func (c controller) configure(ctx context.Context, minion, request string) (oduflow.Response, error) {
	if _, err := c.d.Start(ctx, minion, request, receipt.ProfileConfigure); err != nil {
		return oduflow.Response{}, err
	}
	// Watch yields the status now and at each change of it: no polling, no sleeping
	for r, err := range c.d.Watch(ctx, minion, request, receipt.ProfileConfigure) {
		if err != nil || r.Status != receipt.StatusRunning {
			return r, err
		}
	}
	return oduflow.Response{}, ctx.Err()
}

// Example shows a service testing its controller end to end: the fake Salt master (salttest) with a
// protocol-1 model minion whose key it accepted, a real salt.Client and dispatcher over real sockets, and
// the in-memory claim store. The dispatcher pins the master's accepted keys (WithPKIDir), so the receipt
// proof the minion signs is verified as in production. Requesting the same configuration again publishes
// nothing new.
func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dir, err := os.MkdirTemp("", "fakeminion-example-")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer func() { _ = os.RemoveAll(dir) }()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))

	master, err := salttest.Start(ctx, salttest.WithDir(dir), salttest.WithLogger(quiet))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer func() { _ = master.Close() }()
	minion := "client-" + "5b2f8c1e-3c4d-4e5f-8a9b-0c1d2e3f4a5b"
	m := fakeminion.NewModel(minion,
		fakeminion.WithResult(receipt.ProfileConfigure, fakeminion.Result{Status: receipt.StatusSucceeded, Passed: 3, Total: 3}))
	if err := fakeminion.Add(master, m); err != nil {
		fmt.Println(err)
		return
	}

	client, err := salt.NewClient(master.Addr(), salt.WithAuth(salt.UserKey("root", master.KeyFile())), salt.WithLogger(quiet))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer func() { _ = client.Close() }()
	d, err := oduflow.New(client, oduflow.SaltEvents(master.EventsAddr(), salt.WithLogger(quiet)),
		oduflow.WithPKIDir(master.PKIDir()), oduflow.WithClaimStore(oduflowtest.NewMemoryStore()),
		oduflow.WithLogger(quiet))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer func() { _ = d.Close(closedContext()) }()

	c := controller{d: d}
	request := "0d4c1f7e-9a2b-4c3d-8e5f-6a7b8c9d0e1f"
	r, err := c.configure(ctx, minion, request)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("status:", r.Status, r.Passed, "/", r.Total)
	again, err := c.configure(ctx, minion, request)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("again:", again.Status, "same jid:", *again.JID == *r.JID)
	fmt.Println("runs published:", master.PublicationCount("oduflow_job.run", ""), "runs on the minion:", m.Runs())
	// Output:
	// status: succeeded 3 / 3
	// again: succeeded same jid: true
	// runs published: 1 runs on the minion: 1
}
