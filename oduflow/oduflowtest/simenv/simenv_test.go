package simenv_test

import (
	"context"
	"testing"

	"github.com/google/uuid"

	"github.com/oduflow/oduflow-go/oduflow"
	"github.com/oduflow/oduflow-go/oduflow/oduflowtest/fakeminion"
	"github.com/oduflow/oduflow-go/oduflow/oduflowtest/simenv"
	"github.com/oduflow/oduflow-go/profiles"
	"github.com/oduflow/oduflow-go/receipt"
)

// A host-named fake minion with a table of the operator's own, and a Dispatcher with the same table: the
// table's profile runs; the seeds' table is refused typed before any I/O.
func TestHostNamedMinionWithTable(t *testing.T) {
	tb, err := profiles.ParseTable([]byte("profiles:\n  webserver: {sls: [roles.webserver]}\nminion_ids: salt\n"), "t.yaml")
	if err != nil {
		t.Fatal(err)
	}
	e := simenv.Start(t)
	m := e.AddMinionNamed("web01.example.com", fakeminion.WithProfileTable(tb),
		fakeminion.WithResult("webserver", fakeminion.Result{Status: receipt.StatusSucceeded, Passed: 2, Total: 2}))
	d := e.Dispatcher(oduflow.WithProfiles(tb))
	req := uuid.NewString()
	if _, err := d.Start(context.Background(), m.ID(), req, "webserver"); err != nil {
		t.Fatal(err)
	}
	if got := simenv.WaitFinal(t, d, "webserver", m.ID(), req); got.Status != receipt.StatusSucceeded || got.Passed != 2 {
		t.Fatalf("%+v", got)
	}
	seeds := e.Dispatcher()
	if _, err := seeds.Start(context.Background(), m.ID(), uuid.NewString(), receipt.ProfileConfigure); err == nil {
		t.Fatal("the seeds' table took a host-named minion")
	}
}
