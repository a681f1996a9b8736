package oduflowtest_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/oduflow/oduflow-go/oduflow/catalog"
	"github.com/oduflow/oduflow-go/oduflow/oduflowtest"
)

// fileCatalogFactory: every backend is a catalog directory; two handles on it are two FileStores, as
// two processes sharing the directory would open.
func fileCatalogFactory() oduflowtest.CatalogFactory {
	return oduflowtest.CatalogFactory{
		New: func(t testing.TB) string { return filepath.Join(t.TempDir(), "catalog") },
		Open: func(_ context.Context, dir string) (catalog.Store, error) {
			return catalog.Open(dir, catalog.WithCreate())
		},
		Corrupt: func(_ context.Context, dir string, r oduflowtest.CatalogRecord, data []byte) error {
			name := "def." + r.ID + ".json"
			switch {
			case r.Execution:
				name = "exe." + r.MinionID + "." + r.ID + ".json"
			case r.Assignment:
				name = "asg." + r.ID + "." + r.MinionID + ".json"
			}
			// Through a temporary file and a rename, as the store writes: the record is whole or absent.
			tmp := filepath.Join(dir, ".corrupt-"+name)
			if err := os.WriteFile(tmp, data, 0o600); err != nil {
				return err
			}
			return os.Rename(tmp, filepath.Join(dir, name))
		},
		MaxRecordSize: 8 << 20, // the file catalog's record cap
		MultiProcess:  true,    // a location is a directory path: a child reaches it
	}
}

// TestFileCatalogConformance: catalog.FileStore passes the catalog conformance suite (a holder that dies
// releases its flock at once; that clause is proven with processes in internal/safefile).
func TestFileCatalogConformance(t *testing.T) {
	oduflowtest.TestCatalogStore(t, fileCatalogFactory())
}
