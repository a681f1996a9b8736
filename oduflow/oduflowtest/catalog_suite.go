package oduflowtest

import (
	"context"
	"errors"
	"io"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/oduflow/oduflow-go/oduflow/catalog"
	"github.com/oduflow/oduflow-go/receipt"
)

// CatalogFactory is how TestCatalogStore gets catalogs. Every subtest calls New for a fresh, empty
// backend and Open for each handle it needs; two handles opened on one location are two controller
// replicas sharing one catalog.
type CatalogFactory struct {
	// New creates a fresh, empty backend, registers its cleanup with t and returns its location.
	New func(t testing.TB) (location string)
	// Open returns a new handle on the backend at location, compiling sources with
	// catalog.Compile. The suite closes it when it implements io.Closer.
	Open func(ctx context.Context, location string) (catalog.Store, error)
	// Corrupt stores data verbatim as the record r, bypassing every check. Nil: the malformed-record
	// subtest is skipped.
	Corrupt func(ctx context.Context, location string, r CatalogRecord, data []byte) error
	// MaxRecordSize is the largest record the backend reads back; the suite stores one byte more and
	// expects catalog.ErrCorrupt. Zero: that case is skipped.
	MaxRecordSize int
	// LockTTL is how long a server lock may outlive its holder (an etcd session's TTL).
	LockTTL time.Duration
	// KillHolder makes the server locks held through st lapse as if its process had hung or been
	// partitioned away (an etcd store stops its keep-alives). Nil: that clause is skipped.
	KillHolder func(st catalog.Store)
	// MultiProcess: handles opened in other OS processes share the backend named by a location. The
	// suite then kills a child process holding a server lock with SIGKILL (the child re-executes the test
	// binary as TestClaimStore's children do, see the package documentation).
	MultiProcess bool
}

// CatalogRecord names one stored record for CatalogFactory.Corrupt: a definition (ID), an execution
// snapshot (Execution, MinionID and ID, its request id) or an assignment (Assignment, MinionID and ID,
// the definition id).
type CatalogRecord struct {
	Execution  bool
	Assignment bool
	MinionID   string
	ID         string
}

// TestCatalogStore runs the conformance suite of catalog.Store against the catalogs f makes: definitions
// (one per company and name, also under goroutines racing on two handles), assignments, executions
// (identical-snapshot idempotence, one snapshot per request id under races), tenancy (an assignment's
// company is its definition's, on write and on every read), pointers, the final-outcome
// rule, LockServer exclusivity across handles and its release when the holder dies, and malformed
// records (catalog.ErrCorrupt, never a panic). Every error is checked with the standard library's
// errors.Is.
func TestCatalogStore(t *testing.T, f CatalogFactory) {
	if job, ok := childJobFromEnv(); ok {
		if job.Test != t.Name() || job.Role != roleServerLock {
			t.Skip("oduflowtest: child process of another suite")
		}
		holdServerLock(t, f, job)
		return
	}
	if f.New == nil || f.Open == nil {
		t.Fatal("oduflowtest: CatalogFactory needs New and Open")
	}
	s := &catalogSuite{f: f, root: t.Name()}
	t.Run("Definitions", s.testDefinitions)
	t.Run("GetOrCreateRace", s.testGetOrCreateRace)
	t.Run("Assignments", s.testAssignments)
	t.Run("Executions", s.testExecutions)
	t.Run("CreateExecutionRace", s.testCreateExecutionRace)
	t.Run("Pointers", s.testPointers)
	t.Run("Outcomes", s.testOutcomes)
	t.Run("LockServer", s.testLockServer)
	t.Run("Corrupt", s.testCatalogCorrupt)
	t.Run("Tenancy", s.testTenancy)
}

type catalogSuite struct {
	f    CatalogFactory
	root string // name of the Test function a child process must run
}

// Custom sources the real compiler accepts; catalogSourceB has another digest.
const (
	catalogSourceA = "hello:\n  test.succeed_without_changes:\n    - name: hello\n"
	catalogSourceB = "world:\n  test.succeed_with_changes:\n    - name: world\n"
)

// handles opens n handles on one fresh backend.
func (s *catalogSuite) handles(t *testing.T, n int) (string, []catalog.Store) {
	t.Helper()
	loc := s.f.New(t)
	out := make([]catalog.Store, n)
	for i := range out {
		st, err := s.f.Open(testContext(t), loc)
		if err != nil {
			t.Fatalf("open catalog at %q: %v", loc, err)
		}
		if c, ok := st.(io.Closer); ok {
			t.Cleanup(func() { _ = c.Close() })
		}
		out[i] = st
	}
	return loc, out
}

func newCatalogMinion() string { return "client-" + receipt.NewRequestID() }

func noErr(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// frozen is the snapshot CustomStart would freeze of d for minion under request.
func frozen(t *testing.T, d catalog.Definition, minion, request string, mode catalog.Mode) catalog.Execution {
	t.Helper()
	c, err := catalog.Compile(d.Source)
	noErr(t, "compile", err)
	return catalog.Execution{RequestID: request, Company: d.Company, DefinitionID: d.ID, Revision: d.Revision,
		Source: d.Source, Canonical: c.Canonical, Digest: c.Digest, MinionID: minion, Mode: mode,
		CreatedAt: time.Now().UTC().Truncate(time.Microsecond)}
}

func (s *catalogSuite) testDefinitions(t *testing.T) {
	ctx := testContext(t)
	_, h := s.handles(t, 2)
	a, b := h[0], h[1]
	d, err := a.CreateDefinition(ctx, "acme", "web", []byte(catalogSourceA))
	noErr(t, "CreateDefinition", err)
	if d.Revision != 1 || d.Company != "acme" || d.Name != "web" || receipt.ValidateRequestID(d.ID) != nil {
		t.Fatalf("created %+v", d)
	}
	if got, err := b.Definition(ctx, d.ID); err != nil || got.Digest != d.Digest || string(got.Source) != catalogSourceA {
		t.Fatalf("Definition from the other handle: %+v %v", got, err)
	}
	_, err = b.CreateDefinition(ctx, "acme", "web", []byte(catalogSourceB))
	wantErr(t, "CreateDefinition of a name in use", err, catalog.ErrExists)
	got, created, err := b.GetOrCreateDefinition(ctx, "acme", "web", []byte(catalogSourceB))
	if err != nil || created || got.ID != d.ID || string(got.Source) != catalogSourceA {
		t.Fatalf("GetOrCreateDefinition of an existing name: %+v %v %v", got, created, err)
	}
	other, created, err := b.GetOrCreateDefinition(ctx, "other-co", "web", []byte(catalogSourceA))
	if err != nil || !created || other.ID == d.ID {
		t.Fatalf("the same name in another company: %+v %v %v", other, created, err)
	}
	_, err = a.CreateDefinition(ctx, "acme", "bad", []byte("not: [valid"))
	wantErr(t, "CreateDefinition of a source the compiler refuses", err, catalog.ErrInvalid)
	_, err = a.CreateDefinition(ctx, "", "x", []byte(catalogSourceA))
	wantErr(t, "CreateDefinition without company", err, catalog.ErrInvalid)
	_, err = a.CreateDefinition(ctx, "acme", "bad\x00name", []byte(catalogSourceA))
	wantErr(t, "CreateDefinition with a control character in the name", err, catalog.ErrInvalid)

	same, err := b.SaveSource(ctx, d.ID, []byte(catalogSourceA))
	if err != nil || same.Revision != 1 {
		t.Fatalf("SaveSource of the same source: %+v %v", same, err)
	}
	next, err := b.SaveSource(ctx, d.ID, []byte(catalogSourceB))
	if err != nil || next.Revision != 2 || next.Digest == d.Digest {
		t.Fatalf("SaveSource of changed source: %+v %v", next, err)
	}
	_, err = a.SaveSource(ctx, d.ID, []byte("not: [valid"))
	wantErr(t, "SaveSource of a source the compiler refuses", err, catalog.ErrInvalid)
	if got, _ := a.Definition(ctx, d.ID); got.Revision != 2 || string(got.Source) != catalogSourceB {
		t.Fatalf("after SaveSource: %+v", got)
	}

	web2, err := a.CreateDefinition(ctx, "acme", "web2", []byte(catalogSourceA))
	noErr(t, "CreateDefinition web2", err)
	_, err = a.Rename(ctx, web2.ID, "web")
	wantErr(t, "Rename to a name in use", err, catalog.ErrExists)
	renamed, err := b.Rename(ctx, d.ID, "web-old")
	if err != nil || renamed.Name != "web-old" || renamed.Revision != 2 {
		t.Fatalf("Rename: %+v %v", renamed, err)
	}
	if moved, err := a.Rename(ctx, web2.ID, "web"); err != nil || moved.Name != "web" {
		t.Fatalf("Rename to the freed name: %+v %v", moved, err)
	}
	if g, created, err := b.GetOrCreateDefinition(ctx, "acme", "web-old", []byte(catalogSourceA)); err != nil || created || g.ID != d.ID {
		t.Fatalf("GetOrCreateDefinition finds the renamed definition: %+v %v %v", g, created, err)
	}

	_, err = a.Definition(ctx, receipt.NewRequestID())
	wantErr(t, "Definition of an unknown id", err, catalog.ErrNotFound)
	_, err = a.Definition(ctx, "../etc/passwd")
	wantErr(t, "Definition of a malformed id", err, catalog.ErrInvalid)
	all, err := b.Definitions(ctx)
	if err != nil || len(all) != 3 || all[0].ID != d.ID || all[1].ID != other.ID || all[2].ID != web2.ID {
		t.Fatalf("Definitions (creation order): %d %v", len(all), err)
	}
}

// testGetOrCreateRace: goroutines on two handles GetOrCreateDefinition one (company, name) at once:
// exactly one creates it, all get its id, the catalog holds one definition.
func (s *catalogSuite) testGetOrCreateRace(t *testing.T) {
	ctx := testContext(t)
	_, h := s.handles(t, 2)
	const n = 24
	var created atomic.Int32
	ids := make([]string, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			d, c, err := h[i%2].GetOrCreateDefinition(ctx, "acme", "raced", []byte(catalogSourceA))
			if err != nil {
				t.Errorf("GetOrCreateDefinition: %v", err)
				return
			}
			if c {
				created.Add(1)
			}
			ids[i] = d.ID
		}()
	}
	close(start)
	wg.Wait()
	if created.Load() != 1 {
		t.Fatalf("%d goroutines created the definition", created.Load())
	}
	for i := range ids {
		if ids[i] != ids[0] {
			t.Fatalf("goroutine %d got definition %s, goroutine 0 %s", i, ids[i], ids[0])
		}
	}
	all, err := h[1].Definitions(ctx)
	if err != nil || len(all) != 1 {
		t.Fatalf("Definitions after the race: %d %v", len(all), err)
	}
}

func (s *catalogSuite) testAssignments(t *testing.T) {
	ctx := testContext(t)
	_, h := s.handles(t, 2)
	a, b := h[0], h[1]
	d, err := a.CreateDefinition(ctx, "acme", "web", []byte(catalogSourceA))
	noErr(t, "CreateDefinition", err)
	m1, m2 := newCatalogMinion(), newCatalogMinion()
	as, err := a.Assign(ctx, d.ID, m1, "acme")
	if err != nil || as.DefinitionID != d.ID || as.MinionID != m1 || as.Company != "acme" {
		t.Fatalf("Assign: %+v %v", as, err)
	}
	again, err := b.Assign(ctx, d.ID, m1, "acme")
	if err != nil || !again.CreatedAt.Equal(as.CreatedAt) {
		t.Fatalf("Assign again: %+v %v", again, err)
	}
	_, err = b.Assign(ctx, d.ID, m1, "other-co")
	wantErr(t, "Assign for a company that does not own the definition", err, catalog.ErrInvalid)
	_, err = b.Assign(ctx, receipt.NewRequestID(), m1, "acme")
	wantErr(t, "Assign of an unknown definition", err, catalog.ErrNotFound)
	_, err = b.Assign(ctx, d.ID, "bad minion", "acme")
	wantErr(t, "Assign to a malformed minion id", err, catalog.ErrInvalid)
	noErr(t, "Assign m2", func() error { _, err := a.Assign(ctx, d.ID, m2, "acme"); return err }())
	if got, err := b.Assignment(ctx, d.ID, m2); err != nil || got.MinionID != m2 {
		t.Fatalf("Assignment: %+v %v", got, err)
	}
	if l, err := b.Assignments(ctx, m1); err != nil || len(l) != 1 || l[0].MinionID != m1 {
		t.Fatalf("Assignments of one server: %v %v", l, err)
	}
	if l, err := b.Assignments(ctx, ""); err != nil || len(l) != 2 {
		t.Fatalf("Assignments of every server: %v %v", l, err)
	}
	noErr(t, "Unassign", b.Unassign(ctx, d.ID, m1))
	wantErr(t, "Unassign again", a.Unassign(ctx, d.ID, m1), catalog.ErrNotFound)
	_, err = a.Assignment(ctx, d.ID, m1)
	wantErr(t, "Assignment after Unassign", err, catalog.ErrNotFound)
	// A host-named server (a fleet with minion_ids: salt) is assigned, listed and locked like any other.
	const host = "web01.prod.example.com"
	noErr(t, "Assign a host-named server", func() error { _, err := a.Assign(ctx, d.ID, host, "acme"); return err }())
	if l, err := b.Assignments(ctx, host); err != nil || len(l) != 1 || l[0].MinionID != host {
		t.Fatalf("Assignments of a host-named server: %v %v", l, err)
	}
	unlock, err := b.LockServer(ctx, host)
	noErr(t, "LockServer of a host-named server", err)
	noErr(t, "unlock", unlock())
	_, err = b.Assign(ctx, d.ID, "web01.lock", "acme")
	wantErr(t, "Assign to an id ending in .lock", err, catalog.ErrInvalid)
}

func (s *catalogSuite) testExecutions(t *testing.T) {
	ctx := testContext(t)
	_, h := s.handles(t, 2)
	a, b := h[0], h[1]
	d, err := a.CreateDefinition(ctx, "acme", "web", []byte(catalogSourceA))
	noErr(t, "CreateDefinition", err)
	minion, req := newCatalogMinion(), receipt.NewRequestID()
	e := frozen(t, d, minion, req, catalog.ModeApply)
	e.Pointers = []catalog.Pointer{{RequestID: receipt.NewRequestID(), Reason: "reuse_running"}}
	got, err := a.CreateExecution(ctx, e)
	if err != nil || got.Outcome.Status != receipt.StatusNotStarted || len(got.Pointers) != 0 || got.Digest != e.Digest {
		t.Fatalf("CreateExecution (starts queued, pointers ignored): %+v %v", got, err)
	}
	if again, err := b.CreateExecution(ctx, e); err != nil || !again.SameSnapshot(got) {
		t.Fatalf("CreateExecution of the identical snapshot: %+v %v", again, err)
	}
	changed := e
	changed.Mode = catalog.ModeApplyAgain
	_, err = b.CreateExecution(ctx, changed)
	wantErr(t, "CreateExecution of another snapshot under a used request id", err, catalog.ErrExists)
	elsewhere := frozen(t, d, newCatalogMinion(), req, catalog.ModeApply)
	_, err = b.CreateExecution(ctx, elsewhere)
	wantErr(t, "CreateExecution of a used request id on another server", err, catalog.ErrExists)
	bad := frozen(t, d, minion, receipt.NewRequestID(), catalog.ModeApply)
	bad.Digest = receipt.Digest([]byte("other"))
	_, err = a.CreateExecution(ctx, bad)
	wantErr(t, "CreateExecution with a digest not of its payload", err, catalog.ErrInvalid)

	if x, err := b.Execution(ctx, req); err != nil || !x.SameSnapshot(got) {
		t.Fatalf("Execution: %+v %v", x, err)
	}
	if x, ptr, err := b.Resolve(ctx, req); err != nil || ptr || x.RequestID != req {
		t.Fatalf("Resolve: %+v %v %v", x, ptr, err)
	}
	_, err = a.Execution(ctx, receipt.NewRequestID())
	wantErr(t, "Execution of an unknown request id", err, catalog.ErrNotFound)
	second := frozen(t, d, minion, receipt.NewRequestID(), catalog.ModeApplyAgain)
	second.CreatedAt = got.CreatedAt.Add(time.Second)
	noErr(t, "CreateExecution second", func() error { _, err := b.CreateExecution(ctx, second); return err }())
	list, err := a.Executions(ctx, minion)
	if err != nil || len(list) != 2 || list[0].RequestID != req || list[1].RequestID != second.RequestID {
		t.Fatalf("Executions (creation order): %v %v", len(list), err)
	}
	if l, err := a.Executions(ctx, newCatalogMinion()); err != nil || len(l) != 0 {
		t.Fatalf("Executions of another server: %v %v", l, err)
	}
}

// testCreateExecutionRace: goroutines on two handles create one request id, most with the identical
// snapshot and some with another one: one snapshot is stored; the identical creators all get it, the
// others ErrExists (or, if theirs won, the identical ones get ErrExists).
func (s *catalogSuite) testCreateExecutionRace(t *testing.T) {
	ctx := testContext(t)
	_, h := s.handles(t, 2)
	d, err := h[0].CreateDefinition(ctx, "acme", "web", []byte(catalogSourceA))
	noErr(t, "CreateDefinition", err)
	minion, req := newCatalogMinion(), receipt.NewRequestID()
	snaps := []catalog.Execution{frozen(t, d, minion, req, catalog.ModeApply), frozen(t, d, minion, req, catalog.ModeApplyAgain)}
	const n = 24
	var ok, exists [2]atomic.Int32
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			k := 0
			if i%6 == 5 {
				k = 1
			}
			<-start
			got, err := h[i%2].CreateExecution(ctx, snaps[k])
			switch {
			case err == nil && got.SameSnapshot(snaps[k]):
				ok[k].Add(1)
			case errors.Is(err, catalog.ErrExists):
				exists[k].Add(1)
			default:
				t.Errorf("CreateExecution: %+v %v", got, err)
			}
		}()
	}
	close(start)
	wg.Wait()
	stored, err := h[1].Execution(ctx, req)
	noErr(t, "Execution", err)
	w := 0
	if stored.SameSnapshot(snaps[1]) {
		w = 1
	}
	if ok[w].Load()+exists[w].Load() != int32(countOf(n, w)) || exists[w].Load() != 0 || ok[1-w].Load() != 0 {
		t.Fatalf("stored snapshot %d: ok %d/%d, exists %d/%d", w, ok[0].Load(), ok[1].Load(), exists[0].Load(), exists[1].Load())
	}
	if list, err := h[0].Executions(ctx, minion); err != nil || len(list) != 1 {
		t.Fatalf("Executions after the race: %d %v", len(list), err)
	}
}

// countOf is how many of n goroutines of testCreateExecutionRace use snapshot k.
func countOf(n, k int) int {
	other := 0
	for i := range n {
		if i%6 == 5 {
			other++
		}
	}
	if k == 1 {
		return other
	}
	return n - other
}
