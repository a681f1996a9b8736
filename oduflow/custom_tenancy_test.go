package oduflow

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/oduflow/oduflow-go/oduflow/catalog"
	"github.com/oduflow/oduflow-go/receipt"
)

// TestCustomStartTenancy: company B's definition assigned to company A's server. Before the fix Assign
// accepted it and CustomStart then ran B's source on A's server, recording it as A's execution. Now
// Assign refuses it (catalog.ErrInvalid, the server stays unassigned), and a crossed assignment record
// planted around Assign makes CustomStart fail with catalog.ErrCorrupt: nothing frozen, nothing published.
func TestCustomStartTenancy(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newCstEnv(t)
	e.configure() // custom states need a succeeded configuration first
	defB, err := e.cat.CreateDefinition(ctx, "company-b", "motd", []byte(cstOK))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.cat.Assign(ctx, defB.ID, e.minion.id, "company-a"); !errors.Is(err, catalog.ErrInvalid) {
		t.Errorf("Assign of company B's definition to company A: %v, want catalog.ErrInvalid", err)
	}
	req := receipt.NewRequestID()
	if _, err := e.d.CustomStart(ctx, e.minion.id, req, defB.ID, catalog.ModeApply); !errors.Is(err, ErrNotAssigned) {
		t.Errorf("CustomStart after the refused Assign: %v, want ErrNotAssigned", err)
	}
	crossed, _ := json.Marshal(catalog.Assignment{DefinitionID: defB.ID, MinionID: e.minion.id, Company: "company-a",
		CreatedAt: time.Now().UTC()})
	name := filepath.Join(e.cat.Dir(), "asg."+defB.ID+"."+e.minion.id+".json")
	if err := os.WriteFile(name, crossed, 0o600); err != nil {
		t.Fatal(err)
	}
	req = receipt.NewRequestID()
	if _, err := e.d.CustomStart(ctx, e.minion.id, req, defB.ID, catalog.ModeApply); !errors.Is(err, catalog.ErrCorrupt) {
		t.Errorf("CustomStart with a crossed assignment: %v, want catalog.ErrCorrupt", err)
	}
	if _, err := e.cat.Execution(ctx, req); !errors.Is(err, catalog.ErrNotFound) {
		t.Errorf("execution frozen for a crossed assignment: %v", err)
	}
	// Close drains the workers: had the refused start launched one, its publication is counted by now
	if err := e.d.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if n := e.runs(); n != 0 {
		t.Fatalf("%d publications", n)
	}
}
