package main

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/oduflow/oduflow-go/oduflow/catalog"
	"github.com/oduflow/oduflow-go/receipt"
)

const minionA = "client-5b2f8c1e-3c4d-4e5f-8a9b-0c1d2e3f4a5b"

func openObserverCatalog(t *testing.T) *catalog.FileStore {
	t.Helper()
	s, err := catalog.Open(filepath.Join(t.TempDir(), "catalog"), catalog.WithCreate())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func observerSnapshot(t *testing.T, d catalog.Definition, minion, request string) catalog.Execution {
	t.Helper()
	c, err := catalog.Compile(d.Source)
	if err != nil {
		t.Fatal(err)
	}
	return catalog.Execution{RequestID: request, Company: d.Company, DefinitionID: d.ID, Revision: d.Revision,
		Source: d.Source, Canonical: c.Canonical, Digest: c.Digest, MinionID: minion, Mode: catalog.ModeApply}
}

func TestObserverSeesNoSourceAndOnlyItsCompanies(t *testing.T) {
	ctx := context.Background()
	s := openObserverCatalog(t)
	const secret = "sekrit-password-123"
	d, err := s.CreateDefinition(ctx, "acme", "motd", []byte("motd:\n  test.succeed_without_changes:\n    - name: "+secret+"\n"))
	if err != nil {
		t.Fatal(err)
	}
	dBeta, err := s.CreateDefinition(ctx, "beta", "beta-only", []byte("beta:\n  test.succeed_without_changes:\n    - name: beta\n"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Assign(ctx, d.ID, minionA, "acme"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Assign(ctx, dBeta.ID, minionA, "beta"); err != nil {
		t.Fatal(err)
	}
	reqA := receipt.NewRequestID()
	if _, err := s.CreateExecution(ctx, observerSnapshot(t, d, minionA, reqA)); err != nil {
		t.Fatal(err)
	}
	ptr := receipt.NewRequestID()
	if _, err := s.AddPointer(ctx, reqA, ptr, "reuse_running"); err != nil {
		t.Fatal(err)
	}
	eb := observerSnapshot(t, dBeta, minionA, receipt.NewRequestID())
	eb.Company = "beta"
	if _, err := s.CreateExecution(ctx, eb); err != nil {
		t.Fatal(err)
	}
	if _, err := s.RecordOutcome(ctx, reqA, catalog.Outcome{Status: receipt.StatusSucceeded, Passed: 1, Total: 1,
		ConfirmedBy: catalog.ConfirmedByMinionReceipt, Dispatched: true}); err != nil {
		t.Fatal(err)
	}

	o := NewObserver(s, "acme")
	defs, err := o.Definitions(ctx)
	if err != nil || len(defs) != 1 || defs[0].ID != d.ID {
		t.Fatalf("defs: %+v %v", defs, err)
	}
	asg, err := o.Assignments(ctx, minionA)
	if err != nil || len(asg) != 1 || asg[0].DefinitionName != "motd" {
		t.Fatalf("assignments: %+v %v", asg, err)
	}
	execs, err := o.Executions(ctx, minionA)
	if err != nil || len(execs) != 1 || execs[0].Status != receipt.StatusSucceeded || execs[0].Passed != 1 ||
		len(execs[0].PointedBy) != 1 {
		t.Fatalf("executions: %+v %v", execs, err)
	}
	v, err := o.Execution(ctx, ptr)
	if err != nil || v.RequestID != reqA {
		t.Fatalf("via pointer: %+v %v", v, err)
	}
	if _, err := o.Execution(ctx, eb.RequestID); !errors.Is(err, catalog.ErrNotFound) {
		t.Fatalf("other company: %v", err)
	}
	all, _ := json.Marshal([]any{defs, asg, execs, v})
	if strings.Contains(string(all), secret) || strings.Contains(string(all), "bW90ZDo") { // the source's "motd:" in base64
		t.Fatalf("observer output leaks source: %s", all)
	}
	if none, err := NewObserver(s).Executions(ctx, minionA); err != nil || len(none) != 0 {
		t.Fatalf("no companies: %+v %v", none, err)
	}
}
