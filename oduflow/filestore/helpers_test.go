package filestore

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/oduflow/oduflow-go/oduflow/claims"
	"github.com/oduflow/oduflow-go/receipt"
)

// The helpers of package oduflow's tests that the store's own tests need (those tests were there
// before the store had a package of its own).

func claimDir(t testing.TB) string { return filepath.Join(t.TempDir(), "claims") }

func newMinionID() string { return "client-" + uuid.NewString() }

// fixedClock is a wall clock that stands still: the claims' recorded times.
type fixedClock struct{ t time.Time }

func newFakeClock() fixedClock { return fixedClock{t: time.Now().UTC()} }

func (c fixedClock) Now() time.Time { return c.t }

// newClaim is a protocol claim of a new client in phase claimed, created at clk's time.
func newClaim(clk fixedClock, p receipt.Profile) *claims.Claim {
	return &claims.Claim{Protocol: claims.Protocol, MinionID: newMinionID(), RequestID: uuid.NewString(), Profile: p,
		Role: "roles.client_stack", JID: "20261129120000000001", Phase: claims.PhaseClaimed, CreatedAt: clk.Now()}
}

// readFixture reads a legacy claim of package oduflow's testdata.
func readFixture(t testing.TB, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "testdata", "legacy", name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}
