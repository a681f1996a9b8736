package etcdtest

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/oduflow/oduflow-go/oduflow"
	"github.com/oduflow/oduflow-go/oduflow/catalog"
	"github.com/oduflow/oduflow-go/oduflow/oduflowtest/fakeminion"
	"github.com/oduflow/oduflow-go/receipt"
	"github.com/oduflow/oduflow-go/salt"
	"github.com/oduflow/oduflow-go/salt/salttest"
)

// replica is one controller: a Dispatcher on its own etcd Store, with the custom catalog of that Store.
type replica struct {
	d   *oduflow.Dispatcher
	cat catalog.Store
}

// customReplicas starts a fake Salt master with one protocol-1 model minion and n replicas sharing one
// fresh prefix on the embedded member (claims and catalog).
func customReplicas(t *testing.T, ctx context.Context, n int) ([]replica, *fakeminion.Model) {
	t.Helper()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	master, m := customMaster(t, ctx)
	var out []replica
	for _, st := range newStores(t, n) {
		cat, err := st.Catalog()
		if err != nil {
			t.Fatal(err)
		}
		client, err := salt.NewClient(master.Addr(), salt.WithAuth(salt.UserKey("root", master.KeyFile())),
			salt.WithLogger(quiet))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = client.Close() })
		d, err := oduflow.New(client, oduflow.SaltEvents(master.EventsAddr(), salt.WithLogger(quiet)),
			oduflow.WithPKIDir(master.PKIDir()), oduflow.WithClaimStore(st), oduflow.WithCustomCatalog(cat),
			oduflow.WithLogger(quiet))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = d.Close(closedContext()) })
		out = append(out, replica{d: d, cat: cat})
	}
	return out, m
}

// customMaster starts a fake Salt master with one protocol-1 model minion (custom payloads checked as
// the module checks them); each run takes 300 ms.
func customMaster(t *testing.T, ctx context.Context) (*salttest.Master, *fakeminion.Model) {
	t.Helper()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	master, err := salttest.Start(ctx, salttest.WithLogger(quiet))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = master.Close() })
	m := fakeminion.NewModel(newMinion(), fakeminion.WithDelay(300*time.Millisecond))
	if err := fakeminion.Add(master, m); err != nil {
		t.Fatal(err)
	}
	return master, m
}

// waitCustomTerminal polls CustomStatus until the request's execution is terminal.
func waitCustomTerminal(t *testing.T, ctx context.Context, r replica, minion, request string) oduflow.CustomResponse {
	t.Helper()
	for {
		got, err := r.d.CustomStatus(ctx, minion, request)
		if err != nil {
			t.Fatalf("CustomStatus %s: %v", request, err)
		}
		if got.Status.Terminal() {
			return got
		}
		select {
		case <-ctx.Done():
			t.Fatalf("request %s still %s", request, got.Status)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// applyAtOnce runs CustomStart of one definition on both replicas at the same moment.
func applyAtOnce(t *testing.T, ctx context.Context, reps []replica, minion, defID string, requests [2]string) [2]oduflow.CustomResponse {
	t.Helper()
	var out [2]oduflow.CustomResponse
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			r, err := reps[i].d.CustomStart(ctx, minion, requests[i], defID, catalog.ModeApply)
			if err != nil {
				t.Errorf("replica %d CustomStart %s: %v", i, requests[i], err)
			}
			out[i] = r
		}()
	}
	close(start)
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	return out
}

// TestCustomApplyTwoReplicasRunsOnce: two controller replicas (two Dispatchers, each with its own etcd
// Store and catalog on one cluster and prefix) apply the same custom definition to the same server at the
// same moment. With one request id, both answer for the one execution frozen under it; with two request
// ids, one freezes the execution and the other is recorded as a pointer to it (the per-server lock and
// the reuse rule are shared through etcd). Either way the minion receives exactly one oduflow_job.run.
func TestCustomApplyTwoReplicasRunsOnce(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	reps, m := customReplicas(t, ctx, 2)
	minion := m.ID()
	// Custom executions need a succeeded configure first.
	cfg := receipt.NewRequestID()
	if _, err := reps[0].d.Start(ctx, minion, cfg, receipt.ProfileConfigure); err != nil {
		t.Fatal(err)
	}
	for r, err := range reps[1].d.Watch(ctx, minion, cfg, receipt.ProfileConfigure) { // the etcd watch wakes it
		if err != nil {
			t.Fatal(err)
		}
		if r.Status.Terminal() && r.Status != receipt.StatusSucceeded {
			t.Fatalf("configure ended %s", r.Status)
		}
	}
	executions := 0
	for round := range 6 {
		src := fmt.Sprintf("state_%d:\n  test.succeed_with_changes:\n    - name: round %d\n", round, round)
		def, _, err := reps[round%2].cat.GetOrCreateDefinition(ctx, "acme", fmt.Sprintf("site-%d", round), []byte(src))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := reps[(round+1)%2].cat.Assign(ctx, def.ID, minion, "acme"); err != nil {
			t.Fatal(err)
		}
		sameRequest := round%2 == 0
		requests := [2]string{receipt.NewRequestID(), receipt.NewRequestID()}
		if sameRequest {
			requests[1] = requests[0]
		}
		runsBefore := m.Calls("oduflow_job.run")
		got := applyAtOnce(t, ctx, reps, minion, def.ID, requests)
		exec := got[0].ExecutionID
		if got[1].ExecutionID != exec {
			t.Fatalf("round %d: the replicas answer for executions %s and %s", round, exec, got[1].ExecutionID)
		}
		if sameRequest {
			if exec != requests[0] || got[0].Reused != "" || got[1].Reused != "" {
				t.Fatalf("round %d: one request id answered %+v and %+v", round, got[0], got[1])
			}
		} else {
			creator := 0
			if exec == requests[1] {
				creator = 1
			}
			if exec != requests[creator] || got[creator].Reused != "" || got[1-creator].Reused == "" {
				t.Fatalf("round %d: two request ids answered %+v and %+v", round, got[0], got[1])
			}
			x, isPtr, err := reps[creator].cat.Resolve(ctx, requests[1-creator])
			if err != nil || !isPtr || x.RequestID != exec {
				t.Fatalf("round %d: the second request is not a pointer to %s: %v %v %v", round, exec, x.RequestID, isPtr, err)
			}
		}
		for i, req := range requests {
			final := waitCustomTerminal(t, ctx, reps[1-i], minion, req)
			if final.Status != receipt.StatusSucceeded || final.ExecutionID != exec {
				t.Fatalf("round %d: request %s ended %+v", round, req, final)
			}
		}
		executions++
		if runs := m.Calls("oduflow_job.run") - runsBefore; runs != 1 {
			t.Fatalf("round %d: %d oduflow_job.run publications at the minion, want 1", round, runs)
		}
		if _, ok := m.Receipt(exec); !ok {
			t.Fatalf("round %d: the minion holds no receipt of %s", round, exec)
		}
		list, err := reps[round%2].cat.Executions(ctx, minion)
		if err != nil || len(list) != executions {
			t.Fatalf("round %d: %d executions on the server, want %d: %v", round, len(list), executions, err)
		}
	}
}
