package otel_test

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

// simEnv is the Salt master simulator on real sockets with fake minions, and Dispatchers on it.
type simEnv struct {
	t   testing.TB
	sim *salttest.Master
	dir string
}

func startSim(t testing.TB) *simEnv {
	t.Helper()
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "master"), 0o700); err != nil {
		t.Fatal(err)
	}
	sim, err := salttest.Start(context.Background(), salttest.WithDir(filepath.Join(dir, "master")))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sim.Close() })
	return &simEnv{t: t, sim: sim, dir: dir}
}

// addMinion adds a fake minion whose configure runs succeed (3/3) unless opts say otherwise.
func (e *simEnv) addMinion(opts ...fakeminion.ModelOption) *fakeminion.Model {
	e.t.Helper()
	opts = append([]fakeminion.ModelOption{fakeminion.WithResult(receipt.ProfileConfigure,
		fakeminion.Result{Status: receipt.StatusSucceeded, Passed: 3, Total: 3})}, opts...)
	m := fakeminion.NewModel("client-"+uuid.NewString(), opts...)
	if err := fakeminion.Add(e.sim, m); err != nil {
		e.t.Fatal(err)
	}
	return m
}

// dispatcher is a Dispatcher on the simulator with its claims in a fresh directory.
func (e *simEnv) dispatcher(opts ...oduflow.Option) *oduflow.Dispatcher {
	e.t.Helper()
	client, err := salt.NewClient(e.sim.Addr(), salt.WithAuth(salt.UserKey("root", e.sim.KeyFile())))
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { _ = client.Close() })
	opts = append([]oduflow.Option{oduflow.WithTimers(testTimers()), oduflow.WithClaimDir(filepath.Join(e.t.TempDir(), "claims")),
		oduflow.WithPKIDir(e.sim.PKIDir()), oduflow.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))}, opts...)
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

// waitFinal polls Status until the request is final.
func waitFinal(t testing.TB, d *oduflow.Dispatcher, minion, request string) oduflow.Response {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		r, err := d.Status(context.Background(), minion, request, receipt.ProfileConfigure)
		if err != nil {
			t.Fatal(err)
		}
		if r.Status == receipt.StatusSucceeded || r.Status == receipt.StatusFailed || r.Status == receipt.StatusUnknown {
			return r
		}
		if time.Now().After(deadline) {
			t.Fatalf("not final: %+v", r)
		}
		time.Sleep(time.Millisecond)
	}
}

// testTimers are short windows, so that a test that goes wrong ends in seconds.
func testTimers() oduflow.Timers {
	t := oduflow.DefaultTimers()
	t.ExecutionWait, t.HardDeadline, t.StatusExpiry = 8*time.Second, 9*time.Second, 10*time.Second
	t.LeaseWait, t.PollBudget, t.CallTimeout = 2*time.Second, 16, 2*time.Second
	return t
}
