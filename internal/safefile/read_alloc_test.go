package safefile

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
)

// ReadInto reads into the caller's buffer when it has room for the record and one byte more, and into a
// new one otherwise; either way the content is exact. With a reused buffer the only allocations left are
// the path strings the system call wrappers make (for "/", each component walked and the record).
func TestReadIntoReusesBuffer(t *testing.T) {
	s, err := OpenStore(filepath.Join(t.TempDir(), "a", "b"), WithCreate())
	if err != nil {
		t.Fatal(err)
	}
	rec := []byte(strings.Repeat("x", 300))
	if err := s.WriteAtomic("rec", rec); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 0, 301)
	got, err := s.ReadInto("rec", buf)
	if err != nil || !bytes.Equal(got, rec) || &got[0] != &buf[:1][0] {
		t.Fatalf("exact-room buffer: %v, reused %v", err, err == nil && &got[0] == &buf[:1][0])
	}
	small := make([]byte, 0, 300) // no room for the byte past the end
	got, err = s.ReadInto("rec", small)
	if err != nil || !bytes.Equal(got, rec) || &got[0] == &small[:1][0] {
		t.Fatalf("short buffer: %v", err)
	}
	if got, err := s.Read("rec"); err != nil || !bytes.Equal(got, rec) {
		t.Fatalf("Read: %v", err)
	}
	comps := strings.Count(s.Dir(), "/")
	allocs := testing.AllocsPerRun(50, func() {
		if _, err := s.ReadInto("rec", buf); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > float64(comps+2) {
		t.Fatalf("ReadInto allocates %.0f times (%d path components)", allocs, comps)
	}
	// A record that grew past the caller's buffer is still read whole, and the size bound still holds.
	big := bytes.Repeat([]byte("y"), 5000)
	if err := s.WriteAtomic("rec", big); err != nil {
		t.Fatal(err)
	}
	if got, err := s.ReadInto("rec", buf); err != nil || !bytes.Equal(got, big) {
		t.Fatalf("grown record: %v", err)
	}
}
