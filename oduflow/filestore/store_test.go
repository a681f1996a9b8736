package filestore

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/cockroachdb/errors"
	"github.com/google/uuid"

	"github.com/oduflow/oduflow-go/oduflow/claims"
	"github.com/oduflow/oduflow-go/receipt"
)

func TestFileClaimStoreContract(t *testing.T) {
	ctx := context.Background()
	fs, err := Open(claimDir(t))
	if err != nil {
		t.Fatal(err)
	}
	clk := newFakeClock()
	c := newClaim(clk, receipt.ProfileConfigure)

	// create-if-absent: exactly one of many concurrent creates wins.
	var wins, exists atomic.Int64
	var wg sync.WaitGroup
	for i := 0; i < 50; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := fs.Create(ctx, c.Clone())
			switch {
			case err == nil:
				wins.Add(1)
			case errors.Is(err, claims.ErrClaimExists):
				exists.Add(1)
			default:
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if wins.Load() != 1 || exists.Load() != 49 {
		t.Fatalf("wins %d exists %d", wins.Load(), exists.Load())
	}
	fi, err := os.Stat(filepath.Join(fs.Dir(), claimName(c.RequestID)))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("claim file mode %v %v", fi.Mode(), err)
	}
	got, err := fs.Get(ctx, c.RequestID)
	if err != nil || got.Generation != 1 || got.Phase != claims.PhaseClaimed {
		t.Fatalf("%+v %v", got, err)
	}
	// fenced update: a stale generation loses.
	a, b := got.Clone(), got.Clone()
	now := clk.Now()
	a.Phase, a.DispatchedAt = claims.PhaseDispatching, &now
	if out, err := fs.CompareAndSwap(ctx, a); err != nil || out.Generation != 2 {
		t.Fatalf("%+v %v", out, err)
	}
	b.Phase, b.Status, b.Total = claims.PhaseTerminal, receipt.StatusFailed, 1
	if cur, err := fs.CompareAndSwap(ctx, b); !errors.Is(err, claims.ErrConflict) || cur.Phase != claims.PhaseDispatching {
		t.Fatalf("stale update: %+v %v", cur, err)
	}
	// identity fields are immutable.
	x, _ := fs.Get(ctx, c.RequestID)
	x.JID = "20261129120000999999"
	if _, err := fs.CompareAndSwap(ctx, x); !errors.Is(err, claims.ErrConflict) {
		t.Fatalf("jid change: %v", err)
	}
	// list by client.
	other := newClaim(clk, receipt.ProfileProduction)
	other.Role = "roles.client_production"
	other.MinionID = c.MinionID
	if err := fs.Create(ctx, other); err != nil {
		t.Fatal(err)
	}
	if err := fs.Create(ctx, newClaim(clk, receipt.ProfileConfigure)); err != nil {
		t.Fatal(err)
	}
	list, err := fs.ListByClient(ctx, c.MinionID)
	if err != nil || len(list) != 2 {
		t.Fatalf("list %d %v", len(list), err)
	}
	if _, err := fs.Get(ctx, uuid.NewString()); !errors.Is(err, claims.ErrNoClaim) {
		t.Fatalf("missing: %v", err)
	}
	// nothing raw: the stored claim holds only the documented keys.
	data, _ := fs.files().Read(claimName(c.RequestID))
	for _, k := range []string{"return", "comment", "changes", "stdout", "pillar"} {
		if bytes.Contains(data, []byte(`"`+k+`"`)) {
			t.Fatalf("claim holds %s: %s", k, data)
		}
	}
}

func TestLegacyIndexedByScan(t *testing.T) {
	ctx := context.Background()
	dir := claimDir(t)
	fs, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	data := readFixture(t, "unprofiled_dispatched.json")
	lc, _ := claims.Decode(data)
	if err := fs.files().WriteAtomic(claimName(lc.RequestID), data); err != nil {
		t.Fatal(err)
	}
	list, err := fs.ListByClient(ctx, lc.MinionID)
	if err != nil || len(list) != 1 {
		t.Fatalf("%d %v", len(list), err)
	}
	// A second store on the same directory (another process) uses the recorded index.
	fs2, _ := Open(dir)
	if list, err := fs2.ListByClient(ctx, lc.MinionID); err != nil || len(list) != 1 {
		t.Fatalf("%d %v", len(list), err)
	}
}
