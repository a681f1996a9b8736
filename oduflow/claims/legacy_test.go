package claims

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/oduflow/oduflow-go/receipt"
)

// readFixture reads a legacy claim of package oduflow's testdata (the fixtures its dispatcher tests
// install in a claim directory too).
func readFixture(t testing.TB, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "testdata", "legacy", name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func newMinionID() string { return "client-" + uuid.NewString() }

// newClaim is a protocol claim in phase claimed, created now.
func newClaim(p receipt.Profile) *Claim {
	return &Claim{Protocol: Protocol, MinionID: newMinionID(), RequestID: uuid.NewString(), Profile: p,
		Role: "roles.client_stack", JID: "20261129120000000001", Phase: PhaseClaimed, CreatedAt: time.Now().UTC()}
}

func TestLegacyFixturesDecode(t *testing.T) {
	cases := []struct {
		file     string
		kind     legacyClass
		profile  receipt.Profile
		phase    Phase
		dispatch bool
		quar     bool
	}{
		{"unprofiled_dispatched.json", legacyUnprofiled, receipt.ProfileConfigure, PhaseDispatched, true, true},
		{"unprofiled_succeeded.json", legacyUnprofiled, receipt.ProfileConfigure, PhaseTerminal, true, false},
		{"unprofiled_claimed.json", legacyUnprofiled, receipt.ProfileConfigure, PhaseClaimed, false, false},
		{"preprotocol_production_dispatched.json", legacyPreProtocol, receipt.ProfileProduction, PhaseDispatched, true, true},
		{"preprotocol_configure_failed.json", legacyPreProtocol, receipt.ProfileConfigure, PhaseTerminal, true, false},
	}
	for _, tc := range cases {
		c, err := decodeClaim(readFixture(t, tc.file))
		if err != nil {
			t.Fatalf("%s: %v", tc.file, err)
		}
		if c.legacy() != tc.kind || c.EffectiveProfile() != tc.profile || c.Phase != tc.phase ||
			c.WasDispatched() != tc.dispatch || c.Quarantining() != tc.quar || c.CreatedAt.IsZero() {
			t.Fatalf("%s: %+v", tc.file, c)
		}
	}
}
