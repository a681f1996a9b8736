package catalog

import (
	"bytes"
	"context"
	"testing"

	"github.com/cockroachdb/errors"

	"github.com/oduflow/oduflow-go/internal/safefile"
	"github.com/oduflow/oduflow-go/receipt"
)

// A snapshot too large to be read back must be refused before anything is written: neither the
// request index nor the execution record may exist afterwards, and the request id stays usable.
func TestOversizedSnapshotIsRefusedBeforeWriting(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	d, err := s.CreateDefinition(ctx, "acme", "motd", []byte("a: b\n"))
	if err != nil {
		t.Fatal(err)
	}
	req := receipt.NewRequestID()
	for name, mut := range map[string]func(*Execution){
		"source":    func(e *Execution) { e.Source = bytes.Repeat([]byte("x"), maxSnapshotBytes+1) },
		"canonical": func(e *Execution) { e.Canonical = bytes.Repeat([]byte("1"), maxSnapshotBytes+1) },
	} {
		e := snapshot(t, d, minionA, req, ModeApply)
		mut(&e)
		e.Digest = receipt.Digest(e.Canonical)
		if _, err := s.CreateExecution(ctx, e); !errors.Is(err, ErrInvalid) {
			t.Fatalf("%s: oversized snapshot: %v", name, err)
		}
		if _, err := s.Execution(ctx, req); !errors.Is(err, ErrNotFound) {
			t.Fatalf("%s: a refused snapshot left a trace: %v", name, err)
		}
	}
	// The largest accepted snapshot reads back.
	e := snapshot(t, d, minionA, req, ModeApply)
	e.Source = bytes.Repeat([]byte("\x00"), maxSnapshotBytes) // worst case for JSON: base64
	e.Canonical = bytes.Repeat([]byte("\x00"), maxSnapshotBytes)
	e.Digest = receipt.Digest(e.Canonical)
	if _, err := s.CreateExecution(ctx, e); err != nil {
		t.Fatal(err)
	}
	got, err := s.Execution(ctx, req)
	if err != nil || !bytes.Equal(got.Source, e.Source) || !bytes.Equal(got.Canonical, e.Canonical) {
		t.Fatalf("largest snapshot does not read back: %v", err)
	}
}

// writeJSON refuses a record larger than Read accepts instead of writing something unreadable.
func TestRecordLargerThanReadLimitIsNotWritten(t *testing.T) {
	s := openTest(t)
	big := map[string]string{"x": string(bytes.Repeat([]byte("y"), maxRecordSize))}
	if err := s.writeJSON("big.json", big); !errors.Is(err, ErrInvalid) {
		t.Fatalf("writeJSON: %v", err)
	}
	if err := s.createJSON("big.json", big); !errors.Is(err, ErrInvalid) {
		t.Fatalf("createJSON: %v", err)
	}
	if _, err := s.st.Read("big.json"); !errors.Is(err, safefile.ErrNotExist) {
		t.Fatalf("an oversized record was written: %v", err)
	}
}
