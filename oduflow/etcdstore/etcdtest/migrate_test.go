package etcdtest

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/oduflow/oduflow-go/oduflow/claims"
	"github.com/oduflow/oduflow-go/oduflow/filestore"
	"github.com/oduflow/oduflow-go/oduflow/oduflowtest"
	"github.com/oduflow/oduflow-go/receipt"
)

type migrateReport struct {
	Read, Copied, Unresolved, Present, Conflicts, InFlight, Damaged int
}

func runMigrate(t *testing.T, bin, from, to string) (migrateReport, ctlResult) {
	t.Helper()
	r := runCtl(t, bin, nil, "claims", "migrate", "--from", from, "--to", to)
	var rep struct {
		Read       int `json:"read"`
		Copied     int `json:"copied"`
		Unresolved int `json:"unresolved"`
		Present    int `json:"present"`
		Conflicts  int `json:"conflicts"`
		InFlight   int `json:"in_flight"`
		Damaged    int `json:"damaged"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("claims migrate output: %v: %s", err, r)
	}
	return migrateReport(rep), r
}

// TestClaimsMigrate: oduflowctl claims migrate copies every claim of a file store into etcd with
// create-if-absent: unresolved and final claims alike, never overwriting a claim already in etcd, skipping
// (and reporting) a damaged file and a claim whose worker still holds its lock; a second run finds
// everything present.
func TestClaimsMigrate(t *testing.T) {
	bin := oduflowctl(t)
	ctx := context.Background()
	dst := newStore(t)
	to := claimsURL(t, dst.Prefix())
	dir := filepath.Join(t.TempDir(), "claims")
	src, err := filestore.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	mk := func(phase claims.Phase, status receipt.Status) *claims.Claim {
		c := oduflowtest.NewClaim()
		c.Phase, c.Status = phase, status
		if phase != claims.PhaseClaimed {
			now := time.Now().UTC()
			c.DispatchedAt = &now
		}
		if err := src.Create(ctx, c); err != nil {
			t.Fatal(err)
		}
		return c
	}
	claimed := mk(claims.PhaseClaimed, "")
	dispatched := mk(claims.PhaseDispatched, "")
	final := mk(claims.PhaseTerminal, receipt.StatusSucceeded)
	present := mk(claims.PhaseTerminal, receipt.StatusFailed)
	conflict := mk(claims.PhaseDispatching, "")
	inflight := mk(claims.PhaseDispatching, "")
	if err := os.WriteFile(filepath.Join(dir, receipt.NewRequestID()+".json"), []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	// Already in etcd: one with the same content, one with other content.
	if err := dst.Create(ctx, present); err != nil {
		t.Fatal(err)
	}
	other := *conflict
	other.Phase, other.Status = claims.PhaseTerminal, receipt.StatusFailed
	if err := dst.Create(ctx, &other); err != nil {
		t.Fatal(err)
	}
	lock, err := src.TryRequestLock(ctx, inflight.RequestID) // a worker still runs it
	if err != nil {
		t.Fatal(err)
	}

	rep, r := runMigrate(t, bin, dir, to)
	want := migrateReport{Read: 7, Copied: 3, Unresolved: 2, Present: 1, Conflicts: 1, InFlight: 1, Damaged: 1}
	if rep != want || r.code != 6 {
		t.Fatalf("first run: %+v, want %+v with exit 6: %s", rep, want, r)
	}
	for _, c := range []*claims.Claim{claimed, dispatched, final, present} {
		got, err := dst.Get(ctx, c.RequestID)
		if err != nil {
			t.Fatal(err)
		}
		want := *c
		want.Generation = 1
		a, _ := got.MarshalBinary()
		b, _ := want.MarshalBinary()
		if string(a) != string(b) {
			t.Fatalf("migrated claim:\n got  %s want %s", a, b)
		}
	}
	if got, _ := dst.Get(ctx, conflict.RequestID); got.Phase != claims.PhaseTerminal {
		t.Fatalf("a claim already in etcd was overwritten: %+v", got)
	}
	if _, err := dst.Get(ctx, inflight.RequestID); err == nil {
		t.Fatal("a claim with a live worker was copied")
	}
	// The migrated claims quarantine as before: the dispatched one is unresolved in etcd.
	list, err := dst.ListByClient(ctx, dispatched.MinionID)
	if err != nil || len(list) != 1 || !list[0].Quarantining() {
		t.Fatalf("ListByClient of the migrated dispatched claim: %+v %v", list, err)
	}

	// Once the worker is gone and the damaged file removed, a second run copies the rest and finds the
	// others present; the conflict stays a conflict.
	_ = lock.Release()
	bad, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	for _, p := range bad {
		if data, _ := os.ReadFile(p); string(data) == "{" {
			_ = os.Remove(p)
		}
	}
	rep, r = runMigrate(t, bin, dir, to)
	want = migrateReport{Read: 6, Copied: 1, Unresolved: 1, Present: 4, Conflicts: 1}
	if rep != want || r.code != 1 {
		t.Fatalf("second run: %+v, want %+v with exit 1: %s", rep, want, r)
	}
	if n := countClaims(t, dst.Client(), dst.Prefix()); n != 6 {
		t.Fatalf("%d claims in etcd, want 6", n)
	}
}
