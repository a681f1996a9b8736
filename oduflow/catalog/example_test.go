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

// compileLines stands in for oduflow.CompileCustomSource: the canonical form of a source is its text.
func compileLines(source []byte) (catalog.Compiled, error) {
	if len(source) == 0 {
		return catalog.Compiled{}, errors.New("empty source")
	}
	canon, err := receipt.CanonicalJSON(map[string]any{"source": string(source)})
	if err != nil {
		return catalog.Compiled{}, err
	}
	return catalog.Compiled{Canonical: canon, Digest: receipt.Digest(canon)}, nil
}

func ExampleOpen() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "catalog-example")
	defer os.RemoveAll(dir)
	var create catalog.Option = catalog.WithCreate()
	cat, err := catalog.Open(filepath.Join(dir, "catalog"), compileLines, create)
	if err != nil {
		fmt.Println(err)
		return
	}
	var store catalog.Store = cat

	def, _ := store.CreateDefinition(ctx, "acme", "motd", []byte("motd: hello\n"))
	_, err = store.CreateDefinition(ctx, "acme", "motd", []byte("motd: again\n"))
	fmt.Println(def.Revision, errors.Is(err, catalog.ErrExists))

	const minion = "client-5b2f8c1e-3c4d-4e5f-8a9b-0c1d2e3f4a5b"
	var asg catalog.Assignment
	asg, _ = store.Assign(ctx, def.ID, minion, "acme")
	fmt.Println(asg.Company)

	// The snapshot a custom execution freezes, then a second request id reusing it, then its outcome.
	c, _ := compileLines(def.Source)
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
