package filestore_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/oduflow/oduflow-go/oduflow/claims"
	"github.com/oduflow/oduflow-go/oduflow/filestore"
	"github.com/oduflow/oduflow-go/receipt"
)

// The file store on its own: what oduflow.New opens by default (WithClaimDir), and what a tool that reads
// or migrates claims opens beside a Dispatcher.
func ExampleOpen() {
	root, err := os.MkdirTemp("", "claims-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer func() { _ = os.RemoveAll(root) }()
	var st claims.Store // claims and leases in one value, as oduflow.WithClaimStore takes them
	fs, err := filestore.Open(filepath.Join(root, "claims"))
	if err != nil {
		fmt.Println(err)
		return
	}
	st = fs
	ctx := context.Background()
	c := &claims.Claim{Protocol: claims.Protocol, MinionID: "client-8d5c6a1e-9a65-4c2a-b6a7-2f0e3c1d4b5a",
		RequestID: "4f9d2a7e-3b1c-4d5e-8f6a-7b8c9d0e1f2a", Profile: receipt.ProfileConfigure,
		Role: "roles.client_stack", JID: "20261201000000000000", Phase: claims.PhaseClaimed,
		CreatedAt: time.Now().UTC()}
	fmt.Println(st.Create(ctx, c), c.Generation)
	fmt.Println(errors.Is(st.Create(ctx, c), claims.ErrClaimExists))
	got, err := st.Get(ctx, c.RequestID)
	fmt.Println(got.Phase, got.Legacy(), err)
	_, isWindowed := st.(claims.WindowedStore)
	_, isScanner := st.(claims.UnresolvedScanner)
	fmt.Println(isWindowed, isScanner)
	var _ *filestore.Store = fs
	// Output:
	// <nil> 1
	// true
	// claimed false <nil>
	// true true
}
