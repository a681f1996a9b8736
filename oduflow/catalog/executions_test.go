package catalog

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/cockroachdb/errors"

	"github.com/oduflow/oduflow-go/receipt"
)

func TestExecutionSnapshotIsFrozen(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	d, err := s.CreateDefinition(ctx, "acme", "motd", []byte("a: b\n"))
	if err != nil {
		t.Fatal(err)
	}
	req := receipt.NewRequestID()
	e, err := s.CreateExecution(ctx, snapshot(t, d, minionA, req, ModeApply))
	if err != nil {
		t.Fatal(err)
	}
	if e.Outcome.Status != receipt.StatusNotStarted || e.CreatedAt.IsZero() || e.Revision != 1 {
		t.Fatalf("created %+v", e)
	}
	if _, err := s.SaveSource(ctx, d.ID, []byte("a: changed\n")); err != nil {
		t.Fatal(err)
	}
	got, err := s.Execution(ctx, req)
	if err != nil || string(got.Source) != "a: b\n" || got.Revision != 1 || got.Digest != d.Digest {
		t.Fatalf("frozen: %+v %v", got, err)
	}
	// The identical snapshot again is idempotent (a retry after a crash); another one is refused.
	if again, err := s.CreateExecution(ctx, snapshot(t, d, minionA, req, ModeApply)); err != nil ||
		!again.CreatedAt.Equal(e.CreatedAt) {
		t.Fatalf("idempotent create: %+v %v", again, err)
	}
	if _, err := s.CreateExecution(ctx, snapshot(t, d, minionA, req, ModeApplyAgain)); !errors.Is(err, ErrExists) {
		t.Fatalf("other mode, same request: %v", err)
	}
	if _, err := s.CreateExecution(ctx, snapshot(t, d, minionB, req, ModeApply)); !errors.Is(err, ErrExists) {
		t.Fatalf("other minion, same request: %v", err)
	}
	// Mutating the returned value does not touch the store.
	got.Source[0] = 'X'
	if again, _ := s.Execution(ctx, req); string(again.Source) != "a: b\n" {
		t.Fatal("store shares memory with callers")
	}
}

func TestExecutionValidation(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	d, err := s.CreateDefinition(ctx, "acme", "motd", []byte("a: b\n"))
	if err != nil {
		t.Fatal(err)
	}
	good := snapshot(t, d, minionA, receipt.NewRequestID(), ModeApply)
	cases := map[string]func(*Execution){
		"request":   func(e *Execution) { e.RequestID = "x" },
		"upper":     func(e *Execution) { e.RequestID = strings.ToUpper(e.RequestID) },
		"minion":    func(e *Execution) { e.MinionID = "client-x/.." },
		"mode":      func(e *Execution) { e.Mode = "again" },
		"company":   func(e *Execution) { e.Company = "" },
		"digest":    func(e *Execution) { e.Digest = strings.Repeat("0", 64) },
		"canonical": func(e *Execution) { e.Canonical = nil },
		"revision":  func(e *Execution) { e.Revision = 0 },
		"source":    func(e *Execution) { e.Source = nil },
	}
	for name, mut := range cases {
		e := good.clone()
		mut(&e)
		if _, err := s.CreateExecution(ctx, e); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestPointers(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	d, err := s.CreateDefinition(ctx, "acme", "motd", []byte("a: b\n"))
	if err != nil {
		t.Fatal(err)
	}
	exe := receipt.NewRequestID()
	if _, err := s.CreateExecution(ctx, snapshot(t, d, minionA, exe, ModeApply)); err != nil {
		t.Fatal(err)
	}
	p1, p2 := receipt.NewRequestID(), receipt.NewRequestID()
	if _, err := s.AddPointer(ctx, exe, p1, reasonReuseRunning); err != nil {
		t.Fatal(err)
	}
	e, err := s.AddPointer(ctx, exe, p1, reasonReuseRunning) // idempotent
	if err != nil || len(e.Pointers) != 1 {
		t.Fatalf("again: %+v %v", e.Pointers, err)
	}
	if e, err = s.AddPointer(ctx, exe, p2, reasonReuseSucceeded); err != nil || len(e.Pointers) != 2 ||
		e.Pointers[1].Reason != reasonReuseSucceeded {
		t.Fatalf("second: %+v %v", e.Pointers, err)
	}
	got, ptr, err := s.Resolve(ctx, p1)
	if err != nil || !ptr || got.RequestID != exe {
		t.Fatalf("resolve pointer: %v %v %v", got.RequestID, ptr, err)
	}
	if got, ptr, err = s.Resolve(ctx, exe); err != nil || ptr || got.RequestID != exe {
		t.Fatalf("resolve execution: %v %v %v", got.RequestID, ptr, err)
	}
	var pe *pointerError
	if _, err := s.Execution(ctx, p1); !errors.Is(err, errPointer) || !errors.As(err, &pe) || pe.ExecutionID != exe {
		t.Fatalf("execution of pointer: %v", err)
	}
	// A pointer id cannot become an execution, nor point elsewhere; an execution id cannot be a pointer.
	if _, err := s.CreateExecution(ctx, snapshot(t, d, minionA, p1, ModeApply)); !errors.Is(err, ErrExists) {
		t.Fatalf("pointer as execution: %v", err)
	}
	other := receipt.NewRequestID()
	if _, err := s.CreateExecution(ctx, snapshot(t, d, minionA, other, ModeApplyAgain)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AddPointer(ctx, other, p1, reasonReuseRunning); !errors.Is(err, ErrExists) {
		t.Fatalf("repoint: %v", err)
	}
	if _, err := s.AddPointer(ctx, exe, other, reasonReuseRunning); !errors.Is(err, ErrExists) {
		t.Fatalf("execution as pointer: %v", err)
	}
	if _, err := s.AddPointer(ctx, p1, receipt.NewRequestID(), reasonReuseRunning); !errors.Is(err, errPointer) {
		t.Fatalf("pointer to pointer: %v", err)
	}
	if _, err := s.AddPointer(ctx, exe, exe, reasonReuseRunning); !errors.Is(err, ErrInvalid) {
		t.Fatalf("self: %v", err)
	}
	if _, err := s.AddPointer(ctx, exe, receipt.NewRequestID(), "because"); !errors.Is(err, ErrInvalid) {
		t.Fatalf("reason: %v", err)
	}
	if _, err := s.AddPointer(ctx, receipt.NewRequestID(), receipt.NewRequestID(), reasonReuseRunning); !errors.Is(err, ErrNotFound) {
		t.Fatalf("missing target: %v", err)
	}
}

func TestRequestIDUsedOnceUnderRace(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	d, err := s.CreateDefinition(ctx, "acme", "motd", []byte("a: b\n"))
	if err != nil {
		t.Fatal(err)
	}
	target := receipt.NewRequestID()
	if _, err := s.CreateExecution(ctx, snapshot(t, d, minionA, target, ModeApply)); err != nil {
		t.Fatal(err)
	}
	contested := receipt.NewRequestID()
	var wins atomic.Int32
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var err error
			if i%2 == 0 {
				_, err = s.AddPointer(ctx, target, contested, reasonReuseRunning)
			} else {
				_, err = s.CreateExecution(ctx, snapshot(t, d, minionB, contested, ModeApply))
			}
			if err == nil {
				wins.Add(1)
			} else if !errors.Is(err, ErrExists) {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	// Either every pointer call won (idempotent) or every create did, never a mix.
	if n := wins.Load(); n != 4 {
		t.Fatalf("%d winners, want 4 of one kind", n)
	}
}

func TestOutcomes(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	d, err := s.CreateDefinition(ctx, "acme", "motd", []byte("a: b\n"))
	if err != nil {
		t.Fatal(err)
	}
	req := receipt.NewRequestID()
	if _, err := s.CreateExecution(ctx, snapshot(t, d, minionA, req, ModeApply)); err != nil {
		t.Fatal(err)
	}
	steps := []Outcome{
		{Status: receipt.StatusRunning},
		{Status: receipt.StatusUnknown, ErrorCode: "no_trustworthy_return", Dispatched: true},
		{Status: receipt.StatusSucceeded, Passed: 3, Total: 3, ConfirmedBy: ConfirmedByOperatorAssertion, Dispatched: true},
		{Status: receipt.StatusFailed, Passed: 2, Total: 3, ConfirmedBy: ConfirmedByMinionReceipt, Dispatched: true},
	}
	for _, o := range steps {
		e, err := s.RecordOutcome(ctx, req, o)
		if err != nil || e.Outcome.Status != o.Status || e.Outcome.UpdatedAt.IsZero() {
			t.Fatalf("%+v: %+v %v", o, e.Outcome, err)
		}
	}
	if _, err := s.RecordOutcome(ctx, req, steps[3]); err != nil {
		t.Fatalf("same final outcome again: %v", err)
	}
	if _, err := s.RecordOutcome(ctx, req, Outcome{Status: receipt.StatusSucceeded, Passed: 3, Total: 3,
		ConfirmedBy: ConfirmedByMinionReceipt}); !errors.Is(err, errImmutable) {
		t.Fatalf("rewrite final: %v", err)
	}
	for _, bad := range []Outcome{{Status: "done"}, {Status: receipt.StatusFailed, Passed: 2, Total: 1},
		{Status: receipt.StatusRunning, ConfirmedBy: ConfirmedByMinionReceipt},
		{Status: receipt.StatusFailed, ConfirmedBy: "gut_feeling"}, {Status: receipt.StatusFailed, ErrorCode: "a\nb"}} {
		if _, err := s.RecordOutcome(ctx, req, bad); !errors.Is(err, ErrInvalid) {
			t.Fatalf("%+v: %v", bad, err)
		}
	}
}

func TestExecutionsOrderAndScope(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	d, err := s.CreateDefinition(ctx, "acme", "motd", []byte("a: b\n"))
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for range 5 {
		req := receipt.NewRequestID()
		want = append(want, req)
		if _, err := s.CreateExecution(ctx, snapshot(t, d, minionA, req, ModeApply)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.CreateExecution(ctx, snapshot(t, d, minionB, receipt.NewRequestID(), ModeApply)); err != nil {
		t.Fatal(err)
	}
	got, err := s.Executions(ctx, minionA)
	if err != nil || len(got) != len(want) {
		t.Fatalf("list: %d %v", len(got), err)
	}
	for i := range want {
		if got[i].RequestID != want[i] {
			t.Fatalf("order at %d", i)
		}
	}
}

func TestLockServerSerializes(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	var inside, maxInside atomic.Int32
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			unlock, err := s.LockServer(ctx, minionA)
			if err != nil {
				t.Error(err)
				return
			}
			n := inside.Add(1)
			if n > maxInside.Load() {
				maxInside.Store(n)
			}
			inside.Add(-1)
			if err := unlock(); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if maxInside.Load() != 1 {
		t.Fatalf("%d holders at once", maxInside.Load())
	}
	if _, err := s.LockServer(ctx, "no pe"); !errors.Is(err, ErrInvalid) {
		t.Fatalf("bad minion: %v", err)
	}
}

func TestLargeSnapshotRoundTrips(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	src := []byte(strings.Repeat("k: "+strings.Repeat("v", 60)+"\n", 1000)) // ~64 KiB
	d, err := s.CreateDefinition(ctx, "acme", "big", src)
	if err != nil {
		t.Fatal(err)
	}
	req := receipt.NewRequestID()
	if _, err := s.CreateExecution(ctx, snapshot(t, d, minionA, req, ModeApply)); err != nil {
		t.Fatal(err)
	}
	for range 50 {
		if _, err := s.AddPointer(ctx, req, receipt.NewRequestID(), reasonReuseSucceeded); err != nil {
			t.Fatal(err)
		}
	}
	e, err := s.Execution(ctx, req)
	if err != nil || len(e.Source) != len(src) || len(e.Pointers) != 50 {
		t.Fatalf("%d %d %v", len(e.Source), len(e.Pointers), err)
	}
}
