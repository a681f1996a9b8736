package oduflowtest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/oduflow/oduflow-go/oduflow/catalog"
	"github.com/oduflow/oduflow-go/receipt"
)

// execution creates a definition and a queued execution of it on a fresh server through st.
func execution(t *testing.T, st catalog.Store) catalog.Execution {
	t.Helper()
	ctx := testContext(t)
	d, _, err := st.GetOrCreateDefinition(ctx, "acme", "web", []byte(catalogSourceA))
	noErr(t, "GetOrCreateDefinition", err)
	e, err := st.CreateExecution(ctx, frozen(t, d, newCatalogMinion(), receipt.NewRequestID(), catalog.ModeApply))
	noErr(t, "CreateExecution", err)
	return e
}

func (s *catalogSuite) testPointers(t *testing.T) {
	ctx := testContext(t)
	_, h := s.handles(t, 2)
	a, b := h[0], h[1]
	e := execution(t, a)
	ptr := receipt.NewRequestID()
	got, err := b.AddPointer(ctx, e.RequestID, ptr, "reuse_running")
	if err != nil || len(got.Pointers) != 1 || got.Pointers[0].RequestID != ptr || got.Pointers[0].Reason != "reuse_running" {
		t.Fatalf("AddPointer: %+v %v", got.Pointers, err)
	}
	if again, err := a.AddPointer(ctx, e.RequestID, ptr, "reuse_running"); err != nil || len(again.Pointers) != 1 {
		t.Fatalf("AddPointer of the same pair: %+v %v", again.Pointers, err)
	}
	x, isPtr, err := a.Resolve(ctx, ptr)
	if err != nil || !isPtr || x.RequestID != e.RequestID {
		t.Fatalf("Resolve of a pointer: %+v %v %v", x.RequestID, isPtr, err)
	}
	_, err = a.Execution(ctx, ptr)
	wantErr(t, "Execution of a pointer request id", err, catalog.ErrInvalid)
	_, err = a.AddPointer(ctx, ptr, receipt.NewRequestID(), "reuse_running")
	wantErr(t, "AddPointer to a pointer", err, catalog.ErrInvalid)
	_, err = a.AddPointer(ctx, e.RequestID, e.RequestID, "reuse_running")
	wantErr(t, "AddPointer to itself", err, catalog.ErrInvalid)
	_, err = a.AddPointer(ctx, e.RequestID, receipt.NewRequestID(), "because")
	wantErr(t, "AddPointer with an unknown reason", err, catalog.ErrInvalid)
	_, err = a.AddPointer(ctx, receipt.NewRequestID(), receipt.NewRequestID(), "reuse_running")
	wantErr(t, "AddPointer to an unknown execution", err, catalog.ErrNotFound)
	other := execution(t, b)
	_, err = a.AddPointer(ctx, e.RequestID, other.RequestID, "reuse_succeeded")
	wantErr(t, "AddPointer of a request id that is an execution", err, catalog.ErrExists)
	_, err = a.AddPointer(ctx, other.RequestID, ptr, "reuse_running")
	wantErr(t, "AddPointer of a request id pointing elsewhere", err, catalog.ErrExists)
	_, err = b.CreateExecution(ctx, frozen(t, mustDefinition(t, b, e.DefinitionID), e.MinionID, ptr, catalog.ModeApply))
	wantErr(t, "CreateExecution under a pointer's request id", err, catalog.ErrExists)

	// Pointers added at once through both handles: none is lost (updates are fenced).
	const n = 16
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := h[i%2].AddPointer(ctx, other.RequestID, receipt.NewRequestID(), "reuse_succeeded"); err != nil {
				t.Errorf("concurrent AddPointer: %v", err)
			}
		}()
	}
	wg.Wait()
	if x, err := a.Execution(ctx, other.RequestID); err != nil || len(x.Pointers) != n {
		t.Fatalf("after %d concurrent AddPointer: %d pointers, %v", n, len(x.Pointers), err)
	}
}

func mustDefinition(t *testing.T, st catalog.Store, id string) catalog.Definition {
	t.Helper()
	d, err := st.Definition(testContext(t), id)
	noErr(t, "Definition", err)
	return d
}

func (s *catalogSuite) testOutcomes(t *testing.T) {
	ctx := testContext(t)
	_, h := s.handles(t, 2)
	a, b := h[0], h[1]
	e := execution(t, a)
	running := catalog.Outcome{Status: receipt.StatusRunning, Dispatched: true}
	if got, err := b.RecordOutcome(ctx, e.RequestID, running); err != nil || got.Outcome.Status != receipt.StatusRunning {
		t.Fatalf("RecordOutcome running: %+v %v", got.Outcome, err)
	}
	asserted := catalog.Outcome{Status: receipt.StatusFailed, ConfirmedBy: catalog.ConfirmedByOperatorAssertion, Dispatched: true}
	_, err := a.RecordOutcome(ctx, e.RequestID, asserted)
	noErr(t, "RecordOutcome asserted", err)
	final := catalog.Outcome{Status: receipt.StatusSucceeded, Passed: 2, Total: 2,
		ConfirmedBy: catalog.ConfirmedByMinionReceipt, Dispatched: true}
	if got, err := b.RecordOutcome(ctx, e.RequestID, final); err != nil || !got.Outcome.Same(final) {
		t.Fatalf("a minion receipt replaces an assertion: %+v %v", got.Outcome, err)
	}
	if _, err := a.RecordOutcome(ctx, e.RequestID, final); err != nil {
		t.Fatalf("RecordOutcome of the same final outcome: %v", err)
	}
	failed := catalog.Outcome{Status: receipt.StatusFailed, Passed: 1, Total: 2,
		ConfirmedBy: catalog.ConfirmedByMinionReceipt, Dispatched: true}
	_, err = a.RecordOutcome(ctx, e.RequestID, failed)
	wantErr(t, "RecordOutcome rewriting a final outcome", err, catalog.ErrExists)
	if got, _ := b.Execution(ctx, e.RequestID); !got.Outcome.Same(final) {
		t.Fatalf("final outcome changed: %+v", got.Outcome)
	}
	_, err = a.RecordOutcome(ctx, e.RequestID, catalog.Outcome{Status: receipt.StatusRunning,
		ConfirmedBy: catalog.ConfirmedByMinionReceipt})
	wantErr(t, "RecordOutcome of a confirmed non-terminal outcome", err, catalog.ErrInvalid)
	ptr := receipt.NewRequestID()
	_, err = a.AddPointer(ctx, e.RequestID, ptr, "reuse_succeeded")
	noErr(t, "AddPointer", err)
	_, err = a.RecordOutcome(ctx, ptr, final)
	wantErr(t, "RecordOutcome of a pointer request id", err, catalog.ErrInvalid)

	// Two different final outcomes recorded at once through both handles: exactly one is stored.
	for round := range 4 {
		x := execution(t, a)
		outs := []catalog.Outcome{final, failed}
		var won, lost atomic.Int32
		var wg sync.WaitGroup
		for i := range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, err := h[i].RecordOutcome(ctx, x.RequestID, outs[i])
				switch {
				case err == nil:
					won.Add(1)
				case errors.Is(err, catalog.ErrExists):
					lost.Add(1)
				default:
					t.Errorf("RecordOutcome: %v", err)
				}
			}()
		}
		wg.Wait()
		if won.Load() != 1 || lost.Load() != 1 {
			t.Fatalf("round %d: %d stored, %d refused", round, won.Load(), lost.Load())
		}
	}
}

func (s *catalogSuite) testLockServer(t *testing.T) {
	ctx := testContext(t)
	loc, h := s.handles(t, 2)
	minion := newCatalogMinion()
	_, err := h[0].LockServer(ctx, "../x")
	wantErr(t, "LockServer of a malformed minion id", err, catalog.ErrInvalid)

	// Goroutines on both handles: never two inside.
	var inside, most atomic.Int32
	var wg sync.WaitGroup
	for i := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 3 {
				unlock, err := h[i%2].LockServer(ctx, minion)
				if err != nil {
					t.Errorf("LockServer: %v", err)
					return
				}
				n := inside.Add(1)
				for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
				}
				time.Sleep(5 * time.Millisecond)
				inside.Add(-1)
				if err := unlock(); err != nil {
					t.Errorf("unlock: %v", err)
				}
			}
		}()
	}
	wg.Wait()
	if most.Load() != 1 {
		t.Fatalf("%d holders of one server lock at once", most.Load())
	}

	// Held by one handle, the other waits; released, the other gets it.
	unlock, err := h[0].LockServer(ctx, minion)
	noErr(t, "LockServer", err)
	if !s.lockBlocked(t, h[1], minion) {
		t.Fatal("a second handle took a held server lock")
	}
	noErr(t, "unlock", unlock())
	u2, err := h[1].LockServer(ctx, minion)
	noErr(t, "LockServer after unlock", err)
	noErr(t, "unlock", u2())

	s.lockHolderProcessDies(t, loc, h[1], minion)
	if s.f.KillHolder == nil {
		t.Log("oduflowtest: no KillHolder: a lapsed holder session is not tested")
		return
	}
	holder, err := s.f.Open(ctx, loc)
	noErr(t, "open holder", err)
	if c, ok := holder.(io.Closer); ok {
		t.Cleanup(func() { _ = c.Close() })
	}
	if _, err := holder.LockServer(ctx, minion); err != nil {
		t.Fatal(err)
	}
	s.f.KillHolder(holder)
	if !s.lockBlocked(t, h[1], minion) {
		t.Fatal("the lock of a holder that just died was free at once (its TTL did not run)")
	}
	s.waitLockFree(t, h[1], minion, "a holder whose session lapsed")
}

// lockHolderProcessDies (MultiProcess): a child process takes the server lock and is killed with
// SIGKILL; while it lives the lock is held, once it is dead the lock is free within the TTL.
func (s *catalogSuite) lockHolderProcessDies(t *testing.T, loc string, st catalog.Store, minion string) {
	t.Helper()
	if !s.f.MultiProcess {
		t.Log("oduflowtest: no MultiProcess: a holder process that dies is not tested")
		return
	}
	k := (&suite{root: s.root}).spawn(t, childJob{Role: roleServerLock, Location: loc, Minion: minion})
	k.expect(t, lineHeld)
	if !s.lockBlocked(t, st, minion) {
		k.fail(t, "holds the server lock, yet another process took it")
	}
	k.kill(t)
	s.waitLockFree(t, st, minion, "a holder process killed with SIGKILL")
}

// waitLockFree fails unless LockServer through st succeeds within twice the TTL plus slack.
func (s *catalogSuite) waitLockFree(t *testing.T, st catalog.Store, minion, what string) {
	t.Helper()
	grace := 2*s.f.LockTTL + 10*time.Second
	deadline := time.Now().Add(grace)
	for {
		lctx, cancel := context.WithTimeout(testContext(t), 2*time.Second)
		u, err := st.LockServer(lctx, minion)
		cancel()
		if err == nil {
			noErr(t, "unlock", u())
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the server lock of %s is still held after %v: %v", what, grace, err)
		}
	}
}

// holdServerLock is the child's role: take the server lock, say so, wait to be killed.
func holdServerLock(t *testing.T, f CatalogFactory, job childJob) {
	ctx := testContext(t)
	st, err := f.Open(ctx, job.Location)
	if err != nil {
		t.Fatalf("oduflowtest child: open %q: %v", job.Location, err)
	}
	if _, err := st.LockServer(ctx, job.Minion); err != nil {
		t.Fatalf("oduflowtest child: LockServer: %v", err)
	}
	fmt.Println(lineHeld)
	<-ctx.Done() // the parent kills us long before
	t.Fatal("oduflowtest child: holder was not killed")
}

// lockBlocked reports whether LockServer through st fails to get the lock within a short wait.
func (s *catalogSuite) lockBlocked(t *testing.T, st catalog.Store, minion string) bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(testContext(t), 300*time.Millisecond)
	defer cancel()
	u, err := st.LockServer(ctx, minion)
	if err == nil {
		_ = u()
		return false
	}
	return true
}

// malformed returns hostile variants of a valid record: not JSON, trailing data, a repeated key, a key
// repeated in another letter case, an unknown field, the record of another id, and (max > 0) one byte
// over the size cap.
func malformed(valid, otherID []byte, max int) map[string][]byte {
	rest := valid[1:]
	out := map[string][]byte{
		"garbage":       []byte("\x00\xffnot json"),
		"trailing":      append(bytes.Clone(valid), []byte(`{}`)...),
		"duplicate key": append([]byte(`{"company":"evil",`), rest...),
		"case folded":   append([]byte(`{"Company":"evil",`), rest...),
		"unknown field": append([]byte(`{"extra":1,`), rest...),
		"another id":    otherID,
	}
	if max > 0 {
		out["oversized"] = append(bytes.Clone(valid), bytes.Repeat([]byte(" "), max+1-len(valid))...)
	}
	return out
}

func (s *catalogSuite) testCatalogCorrupt(t *testing.T) {
	if s.f.Corrupt == nil {
		t.Skip("oduflowtest: no Corrupt hook")
	}
	ctx := testContext(t)
	loc, h := s.handles(t, 1)
	st := h[0]
	e := execution(t, st)
	d := mustDefinition(t, st, e.DefinitionID)
	defRec := CatalogRecord{ID: d.ID}
	exeRec := CatalogRecord{Execution: true, MinionID: e.MinionID, ID: e.RequestID}
	validDef, _ := json.Marshal(d)
	od := d
	od.ID = receipt.NewRequestID()
	otherDef, _ := json.Marshal(od)
	validExe, _ := json.Marshal(e)
	oe := e
	oe.RequestID = receipt.NewRequestID()
	otherExe, _ := json.Marshal(oe)
	check := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, catalog.ErrCorrupt) {
			t.Errorf("%s: got %v, want an error matching catalog.ErrCorrupt", what, err)
		}
	}
	for name, data := range malformed(validDef, otherDef, s.f.MaxRecordSize) {
		noErr(t, "Corrupt", s.f.Corrupt(ctx, loc, defRec, data))
		_, err := st.Definition(ctx, d.ID)
		check("definition, "+name+": Definition", err)
		_, err = st.Definitions(ctx)
		check("definition, "+name+": Definitions", err)
	}
	noErr(t, "restore", s.f.Corrupt(ctx, loc, defRec, validDef))
	noErr(t, "Definition restored", func() error { _, err := st.Definition(ctx, d.ID); return err }())
	for name, data := range malformed(validExe, otherExe, s.f.MaxRecordSize) {
		noErr(t, "Corrupt", s.f.Corrupt(ctx, loc, exeRec, data))
		_, err := st.Execution(ctx, e.RequestID)
		check("execution, "+name+": Execution", err)
		_, _, err = st.Resolve(ctx, e.RequestID)
		check("execution, "+name+": Resolve", err)
		_, err = st.Executions(ctx, e.MinionID)
		check("execution, "+name+": Executions", err)
	}
	noErr(t, "restore", s.f.Corrupt(ctx, loc, exeRec, validExe))
	if x, err := st.Execution(ctx, e.RequestID); err != nil || !x.SameSnapshot(e) {
		t.Fatalf("Execution restored: %v", err)
	}
}

// testTenancy: Assign refuses a definition of another company (catalog.ErrInvalid), on any handle; a
// crossed assignment record stored around Assign (company A on company B's definition) reads back as
// catalog.ErrCorrupt through Assignment and Assignments, never as A's right to run B's source; Unassign
// removes it.
func (s *catalogSuite) testTenancy(t *testing.T) {
	ctx := testContext(t)
	loc, h := s.handles(t, 2)
	a, b := h[0], h[1]
	dA, err := a.CreateDefinition(ctx, "company-a", "web", []byte(catalogSourceA))
	noErr(t, "CreateDefinition A", err)
	dB, err := b.CreateDefinition(ctx, "company-b", "web", []byte(catalogSourceB))
	noErr(t, "CreateDefinition B", err)
	minion := newCatalogMinion()
	for i, st := range h {
		_, err := st.Assign(ctx, dB.ID, minion, "company-a")
		wantErr(t, "Assign of company B's definition to company A", err, catalog.ErrInvalid)
		_, err = st.Assignment(ctx, dB.ID, minion)
		wantErr(t, "Assignment after the refused Assign", err, catalog.ErrNotFound)
		if i == 0 {
			noErr(t, "Assign A", func() error { _, err := st.Assign(ctx, dA.ID, minion, "company-a"); return err }())
		}
	}
	if s.f.Corrupt == nil {
		return
	}
	crossed, _ := json.Marshal(catalog.Assignment{DefinitionID: dB.ID, MinionID: minion, Company: "company-a",
		CreatedAt: time.Now().UTC()})
	noErr(t, "Corrupt", s.f.Corrupt(ctx, loc, CatalogRecord{Assignment: true, MinionID: minion, ID: dB.ID}, crossed))
	for _, st := range h {
		_, err := st.Assignment(ctx, dB.ID, minion)
		wantErr(t, "Assignment of a crossed record", err, catalog.ErrCorrupt)
		if errors.Is(err, catalog.ErrNotFound) || errors.Is(err, catalog.ErrInvalid) {
			t.Errorf("a crossed record matches another sentinel too: %v", err)
		}
		_, err = st.Assignments(ctx, minion)
		wantErr(t, "Assignments with a crossed record", err, catalog.ErrCorrupt)
		_, err = st.Assignments(ctx, "")
		wantErr(t, "Assignments of every server with a crossed record", err, catalog.ErrCorrupt)
	}
	noErr(t, "Unassign the crossed record", a.Unassign(ctx, dB.ID, minion))
	if l, err := b.Assignments(ctx, minion); err != nil || len(l) != 1 || l[0].DefinitionID != dA.ID {
		t.Fatalf("Assignments after removing the crossed record: %v %v", l, err)
	}
}
