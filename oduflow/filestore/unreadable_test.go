package filestore

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/oduflow/oduflow-go/internal/safefile"
	"github.com/oduflow/oduflow-go/oduflow/claims"
	"github.com/oduflow/oduflow-go/receipt"
)

// within fails the test if op has not returned in 20 seconds (a blocking open of a FIFO never returns; a
// loaded CI machine can take several seconds for a Start and its worker).
func within(t *testing.T, what string, op func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); op() }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatalf("%s hangs", what)
	}
}

func TestNonRegularIndexEntryRefusedAtOnce(t *testing.T) {
	ctx := context.Background()
	clk := newFakeClock()
	fs, err := Open(claimDir(t))
	if err != nil {
		t.Fatal(err)
	}
	c := newClaim(clk, receipt.ProfileConfigure)
	idx := filepath.Join(fs.Dir(), "clients", c.MinionID)
	if err := os.MkdirAll(idx, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mkfifo(filepath.Join(idx, c.RequestID), 0o600); err != nil {
		t.Fatal(err)
	}
	within(t, "Create beside a FIFO index entry", func() {
		if err := fs.Create(ctx, c); !errors.Is(err, safefile.ErrNotRegular) {
			t.Errorf("Create: %v", err)
		}
	})
	if _, err := fs.Get(ctx, c.RequestID); !errors.Is(err, claims.ErrNoClaim) {
		t.Fatalf("claim written despite the refused index entry: %v", err)
	}
}
