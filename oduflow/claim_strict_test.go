package oduflow

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/oduflow/oduflow-go/internal/strictjson"
	"github.com/oduflow/oduflow-go/oduflow/claims"
	"github.com/oduflow/oduflow-go/receipt"
)

// Through the real store: a claim file turned from succeeded into running by appended keys is corrupt, not
// a running request.
func TestStoredClaimWithAppendedKeysIsCorrupt(t *testing.T) {
	ctx := context.Background()
	clk := newFakeClock()
	d := newOffline(t, clk)
	fs := mustFileStore(t, d)
	c := newClaim(clk, receipt.ProfileConfigure)
	putClaim(t, d, c)
	data, err := claimFiles(t, fs).Read(claimName(c.RequestID))
	if err != nil {
		t.Fatal(err)
	}
	data = bytes.TrimSpace(data)
	spoiled := append(append([]byte{}, data[:len(data)-1]...), `,"phase":"dispatched","phase":"claimed"}`...)
	if err := claimFiles(t, fs).WriteAtomic(claimName(c.RequestID), spoiled); err != nil {
		t.Fatal(err)
	}
	if _, err := fs.Get(ctx, c.RequestID); !errors.Is(err, claims.ErrCorruptClaim) || !errors.Is(err, strictjson.ErrDuplicateKey) {
		t.Fatalf("Get: %v", err)
	}
	if _, err := d.Status(ctx, c.MinionID, c.RequestID, receipt.ProfileConfigure); !errors.Is(err, claims.ErrCorruptClaim) {
		t.Fatalf("Status: %v", err)
	}
}
