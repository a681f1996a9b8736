package catalog

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/errors"

	"github.com/oduflow/oduflow-go/internal/safefile"
	"github.com/oduflow/oduflow-go/profiles"
	"github.com/oduflow/oduflow-go/receipt"
)

const (
	minionA = "client-5b2f8c1e-3c4d-4e5f-8a9b-0c1d2e3f4a5b"
	minionB = "client-00000000-0000-4000-8000-000000000001"
)

var errFakeInvalid = errors.New("fake: invalid source")

// fakeCompile stands in for profiles.CompileCustom: comment lines do not change the digest, and a source
// containing INVALID is refused.
func fakeCompile(source []byte) (Compiled, error) {
	if strings.Contains(string(source), "INVALID") || len(source) == 0 {
		return Compiled{}, errFakeInvalid
	}
	var lines []any
	for _, l := range strings.Split(string(source), "\n") {
		if t := strings.TrimSpace(l); t != "" && !strings.HasPrefix(t, "#") {
			lines = append(lines, t)
		}
	}
	canon, err := receipt.CanonicalJSON(map[string]any{"lines": lines})
	if err != nil {
		return Compiled{}, err
	}
	return Compiled{Canonical: canon, Digest: receipt.Digest(canon)}, nil
}

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(time.Second)
	return c.t
}

func openTest(t *testing.T) *FileStore {
	t.Helper()
	c := &clock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	s, err := Open(filepath.Join(t.TempDir(), "catalog"), withCompiler(fakeCompile), WithCreate(), withClock(c.now),
		withLockWait(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func snapshot(t *testing.T, d Definition, minion, request string, mode Mode) Execution {
	t.Helper()
	c, err := fakeCompile(d.Source)
	if err != nil {
		t.Fatal(err)
	}
	return Execution{RequestID: request, Company: "acme", DefinitionID: d.ID, Revision: d.Revision,
		Source: d.Source, Canonical: c.Canonical, Digest: c.Digest, MinionID: minion, Mode: mode}
}

// TestOpenCompilesCustomStates: without withCompiler the catalog compiles with Compile (the real custom
// state compiler): a valid source gets profiles.CompileCustom's digest, an invalid one is refused with
// ErrInvalid and the compiler's typed error, and nothing is stored.
func TestOpenCompilesCustomStates(t *testing.T) {
	ctx := context.Background()
	s, err := Open(filepath.Join(t.TempDir(), "catalog"), WithCreate())
	if err != nil {
		t.Fatal(err)
	}
	const source = "hello:\n  test.succeed_without_changes:\n    - name: hello\n"
	d, err := s.CreateDefinition(ctx, "acme", "web", []byte(source))
	if err != nil {
		t.Fatal(err)
	}
	want, err := profiles.CompileCustom([]byte(source))
	if err != nil {
		t.Fatal(err)
	}
	if d.Digest != want.Digest {
		t.Fatalf("digest %s, want profiles.CompileCustom's %s", d.Digest, want.Digest)
	}
	_, err = s.CreateDefinition(ctx, "acme", "bad", []byte("not: [valid"))
	if !errors.Is(err, ErrInvalid) || !errors.Is(err, profiles.ErrInvalidCustom) {
		t.Fatalf("invalid source: %v", err)
	}
	if defs, err := s.Definitions(ctx); err != nil || len(defs) != 1 {
		t.Fatalf("refused source stored: %d definitions, %v", len(defs), err)
	}
}

func TestDirectoryAndFileModes(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	d, err := s.CreateDefinition(ctx, "acme", "motd", []byte("a: b\n"))
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(s.Dir())
	if err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("dir mode %v %v", fi.Mode(), err)
	}
	fi, err = os.Stat(filepath.Join(s.Dir(), defName(d.ID)))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("file mode %v %v", fi.Mode(), err)
	}
	// A group-readable directory is refused.
	dir := filepath.Join(t.TempDir(), "loose")
	if err := os.Mkdir(dir, 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o750); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(dir, withCompiler(fakeCompile)); !errors.Is(err, safefile.ErrUnsafePath) {
		t.Fatalf("loose dir: %v", err)
	}
}

func TestDefinitionRevisions(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	d, err := s.CreateDefinition(ctx, "acme", "motd", []byte("a: b\n"))
	if err != nil {
		t.Fatal(err)
	}
	if d.Revision != 1 || d.Digest == "" || d.Company != "acme" || d.CreatedAt.IsZero() {
		t.Fatalf("created %+v", d)
	}
	same, err := s.SaveSource(ctx, d.ID, []byte("a: b\n"))
	if err != nil || same.Revision != 1 || !same.UpdatedAt.Equal(d.UpdatedAt) {
		t.Fatalf("unchanged save: %+v %v", same, err)
	}
	// A comment changes the source (revision) but not the digest.
	c, err := s.SaveSource(ctx, d.ID, []byte("# note\na: b\n"))
	if err != nil || c.Revision != 2 || c.Digest != d.Digest || !c.UpdatedAt.After(d.UpdatedAt) {
		t.Fatalf("comment save: %+v %v", c, err)
	}
	m, err := s.SaveSource(ctx, d.ID, []byte("a: c\n"))
	if err != nil || m.Revision != 3 || m.Digest == d.Digest {
		t.Fatalf("semantic save: %+v %v", m, err)
	}
	if _, err := s.SaveSource(ctx, d.ID, []byte("INVALID")); !errors.Is(err, errInvalidSource) ||
		!errors.Is(err, errFakeInvalid) {
		t.Fatalf("invalid save: %v", err)
	}
	got, err := s.Definition(ctx, d.ID)
	if err != nil || got.Revision != 3 || string(got.Source) != "a: c\n" {
		t.Fatalf("after invalid save: %+v %v", got, err)
	}
	r, err := s.Rename(ctx, d.ID, "message of the day")
	if err != nil || r.Revision != 3 || r.Name != "message of the day" {
		t.Fatalf("rename: %+v %v", r, err)
	}
	if _, err := s.CreateDefinition(ctx, "acme", "bad", []byte("INVALID")); !errors.Is(err, errInvalidSource) {
		t.Fatalf("invalid create: %v", err)
	}
	for _, bad := range []struct{ company, name string }{{"", "x"}, {"acme", ""}, {"ac\x00me", "x"},
		{"acme", "a\nb"}, {strings.Repeat("c", maxCompanyLen+1), "x"}} {
		if _, err := s.CreateDefinition(ctx, bad.company, bad.name, []byte("a: b")); !errors.Is(err, ErrInvalid) {
			t.Fatalf("%q/%q: %v", bad.company, bad.name, err)
		}
	}
	if _, err := s.Definition(ctx, receipt.NewRequestID()); !errors.Is(err, ErrNotFound) {
		t.Fatalf("missing: %v", err)
	}
	if _, err := s.Definition(ctx, "../etc"); !errors.Is(err, ErrInvalid) {
		t.Fatalf("bad id: %v", err)
	}
	all, err := s.Definitions(ctx)
	if err != nil || len(all) != 1 || all[0].ID != d.ID {
		t.Fatalf("list: %+v %v", all, err)
	}
}

func TestConcurrentSavesCountEveryChange(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	d, err := s.CreateDefinition(ctx, "acme", "motd", []byte("v: 0\n"))
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := 1; i <= 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := s.SaveSource(ctx, d.ID, []byte("v: "+strings.Repeat("x", i)+"\n")); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	got, err := s.Definition(ctx, d.ID)
	if err != nil || got.Revision != 9 {
		t.Fatalf("revision %d (want 9): %v", got.Revision, err)
	}
}

func TestAssignments(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	d, err := s.CreateDefinition(ctx, "acme", "motd", []byte("a: b\n"))
	if err != nil {
		t.Fatal(err)
	}
	a, err := s.Assign(ctx, d.ID, minionA, "acme")
	if err != nil || a.Company != "acme" || a.MinionID != minionA {
		t.Fatalf("assign: %+v %v", a, err)
	}
	if again, err := s.Assign(ctx, d.ID, minionA, "acme"); err != nil || !again.CreatedAt.Equal(a.CreatedAt) {
		t.Fatalf("assign again: %+v %v", again, err)
	}
	if _, err := s.Assign(ctx, d.ID, minionA, "other"); !errors.Is(err, ErrInvalid) {
		t.Fatalf("assign for a company that does not own the definition: %v", err)
	}
	if _, err := s.Assign(ctx, d.ID, "minion/1", "acme"); !errors.Is(err, ErrInvalid) {
		t.Fatalf("bad minion: %v", err)
	}
	if _, err := s.Assign(ctx, receipt.NewRequestID(), minionA, "acme"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("missing definition: %v", err)
	}
	if _, err := s.Assign(ctx, d.ID, minionB, "beta"); !errors.Is(err, ErrInvalid) {
		t.Fatalf("acme's definition assigned to beta: %v", err)
	}
	if _, err := s.Assign(ctx, d.ID, minionB, "acme"); err != nil {
		t.Fatal(err)
	}
	list, err := s.Assignments(ctx, minionA)
	if err != nil || len(list) != 1 || list[0].DefinitionID != d.ID {
		t.Fatalf("list A: %+v %v", list, err)
	}
	if list, err = s.Assignments(ctx, ""); err != nil || len(list) != 2 {
		t.Fatalf("list all: %+v %v", list, err)
	}
	if err := s.Unassign(ctx, d.ID, minionA); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Assignment(ctx, d.ID, minionA); !errors.Is(err, ErrNotFound) {
		t.Fatalf("after unassign: %v", err)
	}
	if err := s.Unassign(ctx, d.ID, minionA); !errors.Is(err, ErrNotFound) {
		t.Fatalf("unassign twice: %v", err)
	}
}
