package oduflowtest_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/oduflow/oduflow-go/oduflow"
	"github.com/oduflow/oduflow-go/oduflow/filestore"
	"github.com/oduflow/oduflow-go/oduflow/oduflowtest"
)

// A store author runs the suite from one Test function. The factory is built the same way in the parent
// and in the child processes the suite starts, and Open needs nothing but the location.
func ExampleTestClaimStore() {
	_ = func(t *testing.T) { // func TestFileClaimStoreConformance(t *testing.T)
		oduflowtest.TestClaimStore(t, oduflowtest.StoreFactory{
			Capabilities: oduflowtest.Capabilities{MultiProcess: true},
			New:          func(t testing.TB) string { return filepath.Join(t.TempDir(), "claims") },
			Open: func(_ context.Context, dir string) (oduflowtest.Store, error) {
				return filestore.Open(dir)
			},
			Corrupt: func(_ context.Context, dir, requestID string, data []byte) error {
				return os.WriteFile(filepath.Join(dir, requestID+".json"), data, 0o600)
			},
		})
	}
}

// An embedding service's unit test uses the in-memory store in place of the file store.
func ExampleNewMemoryStore() {
	st := oduflowtest.NewMemoryStore()
	_ = []oduflow.Option{oduflow.WithClaimStore(st)}
}
