package safefile

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// List over a directory full of lock files (names List skips) must not build an error per skipped name:
// that cost about 20% CPU in the claim store's listings.
func TestListSkipsNamesWithoutErrors(t *testing.T) {
	s, err := OpenStore(filepath.Join(t.TempDir(), "s"), WithCreate())
	if err != nil {
		t.Fatal(err)
	}
	const n = 200
	for i := 0; i < n; i++ {
		if err := os.WriteFile(filepath.Join(s.Dir(), fmt.Sprintf("run-%03d%s", i, lockSuffix)), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.WriteAtomic("rec-1", []byte("x")); err != nil {
		t.Fatal(err)
	}
	names, err := s.List("")
	if err != nil || len(names) != 1 || names[0] != "rec-1" {
		t.Fatalf("%v %v", names, err)
	}
	// One string per directory entry is the floor (ParseDirent); a skipped name must cost nothing more.
	allocs := testing.AllocsPerRun(20, func() { _, _ = s.List("") })
	if allocs > n+40 {
		t.Fatalf("List allocates %.0f times for %d skipped names", allocs, n)
	}
	if allocs := testing.AllocsPerRun(100, func() { _ = isValidName("run-1" + lockSuffix) }); allocs != 0 {
		t.Fatalf("rejecting a name allocates %.0f times", allocs)
	}
}
