package catalog_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/oduflow/oduflow-go/oduflow/catalog"
	"github.com/oduflow/oduflow-go/receipt"
)

func ExampleOpen() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "catalog-example")
	defer os.RemoveAll(dir)
	var create catalog.Option = catalog.WithCreate()
	cat, err := catalog.Open(filepath.Join(dir, "catalog"), create)
	if err != nil {
		fmt.Println(err)
		return
	}
	var store catalog.Store = cat

	def, _ := store.CreateDefinition(ctx, "acme", "motd", []byte("motd:\n  test.succeed_without_changes:\n    - name: hello\n"))
	_, err = store.CreateDefinition(ctx, "acme", "motd", []byte("motd:\n  test.succeed_without_changes:\n    - name: again\n"))
	fmt.Println(def.Revision, errors.Is(err, catalog.ErrExists))

	const minion = "client-5b2f8c1e-3c4d-4e5f-8a9b-0c1d2e3f4a5b"
	var asg catalog.Assignment
	asg, _ = store.Assign(ctx, def.ID, minion, "acme")
	fmt.Println(asg.Company)

	// The snapshot a custom execution freezes, then a second request id reusing it, then its outcome.
	var c catalog.Compiled // what both catalogs freeze in a snapshot: canonical payload and digest
	c, _ = catalog.Compile(def.Source)
	first, second := receipt.NewRequestID(), receipt.NewRequestID()
	_, _ = store.CreateExecution(ctx, catalog.Execution{RequestID: first, Company: "acme",
		DefinitionID: def.ID, Revision: def.Revision, Source: def.Source, Canonical: c.Canonical,
		Digest: c.Digest, MinionID: minion, Mode: catalog.ModeApply})
	e, _ := store.AddPointer(ctx, first, second, "reuse_running")
	var p catalog.Pointer = e.Pointers[0]
	fmt.Println(p.RequestID == second, p.Reason)
	e, _ = store.RecordOutcome(ctx, first, catalog.Outcome{Status: receipt.StatusSucceeded, Passed: 1, Total: 1,
		ConfirmedBy: catalog.ConfirmedByMasterRecord, Dispatched: true})
	fmt.Println(e.Outcome.Status, e.Outcome.ConfirmedBy)
	// A confirmed outcome is final; an operator's assertion cannot rewrite it.
	_, err = store.RecordOutcome(ctx, first, catalog.Outcome{Status: receipt.StatusFailed, Passed: 0, Total: 1,
		ConfirmedBy: catalog.ConfirmedByOperatorAssertion, Dispatched: true})
	fmt.Println(errors.Is(err, catalog.ErrExists))
	got, pointer, _ := store.Resolve(ctx, second)
	fmt.Println(got.RequestID == first, pointer)
	// Output:
	// 1 true
	// acme
	// true reuse_running
	// succeeded master_record
	// true
	// true true
}
