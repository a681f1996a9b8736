package receipt

import (
	"bytes"
	"github.com/oduflow/oduflow-go/internal/testproc"
	"os"
	"path/filepath"
	"testing"

	"github.com/cockroachdb/errors"

	"github.com/oduflow/oduflow-go/internal/errmark"
	"github.com/oduflow/oduflow-go/internal/safefile"
)

// The receipt-file helpers of the Go worker model: receipts kept as records of a safefile.Store, the way the
// minion module keeps them. They live in the tests because nothing outside them stores receipts from Go.

// readReceipt reads and strictly decodes record name. A record that is safe
// but not a valid receipt (truncated, unknown keys, ...) is ErrCorrupt, and
// its *InvalidReceiptError stays reachable with errors.As. Store errors
// (ErrNotExist, *UnsafePathError, ...) pass through.
func readReceipt(s *safefile.Store, name string) (Receipt, error) {
	data, err := s.Read(name)
	if err != nil {
		return Receipt{}, err
	}
	r, err := Decode(data)
	if err != nil {
		return Receipt{}, errmark.Mark(errors.Wrapf(err, "%s", s.Dir()+"/"+name), safefile.ErrCorrupt)
	}
	return r, nil
}

// writeReceipt commits r (validated, canonical JSON) as record name with
// WriteAtomic. An existing record must itself read back as a valid receipt:
// a malformed or unsafe one is returned as an error and left untouched. An
// existing terminal receipt is immutable: rewriting the identical bytes is a
// no-op, anything else is errIllegalTransition. The caller serializes writers
// of one name (the request lock).
func writeReceipt(s *safefile.Store, name string, r Receipt) error {
	data, err := r.Encode()
	if err != nil {
		return err
	}
	old, err := readReceipt(s, name)
	switch {
	case errors.Is(err, safefile.ErrNotExist):
	case err != nil:
		return err
	case old.Status.Terminal():
		oldData, _ := old.Encode()
		if bytes.Equal(oldData, data) {
			return nil
		}
		return errors.WithStack(&transitionError{From: phaseTerminal, To: phaseOfStatus(r.Status)})
	}
	return s.WriteAtomic(name, data)
}

// createReceipt commits r as record name only if name does not exist yet
// (ErrExist otherwise), with CreateExclusive.
func createReceipt(s *safefile.Store, name string, r Receipt) error {
	data, err := r.Encode()
	if err != nil {
		return err
	}
	return s.CreateExclusive(name, data)
}

func phaseOfStatus(st Status) phase {
	switch st {
	case StatusSucceeded, StatusFailed:
		return phaseTerminal
	case StatusRunning:
		return phaseRunning
	case StatusUnknown:
		return phaseUnknown
	}
	return phaseNone
}

func newStore(t *testing.T) *safefile.Store {
	t.Helper()
	s, err := safefile.OpenStore(filepath.Join(t.TempDir(), "receipts"), safefile.WithCreate())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestReceiptRecords(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	running := goodReceipt()
	running.Status, running.Passed, running.Total = StatusRunning, 0, 0
	if err := createReceipt(s, "req", running); err != nil {
		t.Fatal(err)
	}
	if err := createReceipt(s, "req", running); !errors.Is(err, safefile.ErrExist) {
		t.Fatalf("CreateReceipt twice: %v", err)
	}
	if err := writeReceipt(s, "req", goodReceipt()); err != nil {
		t.Fatal(err)
	}
	if r, err := readReceipt(s, "req"); err != nil || r != goodReceipt() {
		t.Fatalf("ReadReceipt = %+v, %v", r, err)
	}
	if err := writeReceipt(s, "req", goodReceipt()); err != nil {
		t.Fatalf("identical rewrite: %v", err)
	}
	failed := goodReceipt()
	failed.Status, failed.Passed = StatusFailed, 59
	if err := writeReceipt(s, "req", failed); !errors.Is(err, errIllegalTransition) {
		t.Fatalf("overwrite terminal: %v", err)
	}
	bad := goodReceipt()
	bad.JID = "x"
	if err := writeReceipt(s, "other", bad); !errors.Is(err, ErrInvalidReceipt) {
		t.Fatalf("invalid receipt written: %v", err)
	}
	if err := createReceipt(s, "other", bad); !errors.Is(err, ErrInvalidReceipt) {
		t.Fatalf("invalid receipt created: %v", err)
	}
}

func TestCorruptReceiptRecord(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	enc, _ := goodReceipt().Encode()
	p := filepath.Join(s.Dir(), "rec")
	trunc := string(enc[:len(enc)/2])
	if err := os.WriteFile(p, []byte(trunc), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := readReceipt(s, "rec")
	var ie *InvalidReceiptError
	if !errors.Is(err, safefile.ErrCorrupt) || !errors.As(err, &ie) || ie.Reason != reasonBadJSON {
		t.Fatalf("ReadReceipt: %v", err)
	}
	if err := writeReceipt(s, "rec", goodReceipt()); !errors.Is(err, safefile.ErrCorrupt) {
		t.Fatalf("WriteReceipt over corrupt: %v", err)
	}
	if err := createReceipt(s, "rec", goodReceipt()); !errors.Is(err, safefile.ErrExist) {
		t.Fatalf("CreateReceipt over corrupt: %v", err)
	}
	if got, _ := os.ReadFile(p); string(got) != trunc {
		t.Fatalf("corrupt record replaced: %q", got)
	}
}

func TestUnsafeReceiptRecord(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	p := filepath.Join(s.Dir(), "rec")
	if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := readReceipt(s, "rec"); !errors.Is(err, safefile.ErrUnsafePath) {
		t.Fatalf("readReceipt: %v", err)
	}
	if err := writeReceipt(s, "rec", goodReceipt()); !errors.Is(err, safefile.ErrUnsafePath) {
		t.Fatalf("writeReceipt: %v", err)
	}
	if b, _ := os.ReadFile(p); string(b) != "x" {
		t.Fatalf("unsafe record replaced: %q", b)
	}
}

// The worker tests re-execute the test binary as a helper process (TestMain
// switches on helperEnv) which does real file system work and is SIGKILLed or
// SIGSTOPped at chosen points.

const (
	helperEnv      = "RECEIPT_TEST_HELPER"
	helperDirEnv   = "RECEIPT_TEST_DIR"
	helperNameEnv  = "RECEIPT_TEST_NAME"
	helperStageEnv = "RECEIPT_TEST_STAGE"
)

func TestMain(m *testing.M) {
	if mode := os.Getenv(helperEnv); mode == "worker" {
		os.Exit(workerHelper(os.Getenv(helperDirEnv), os.Getenv(helperNameEnv), os.Getenv(helperStageEnv)))
	}
	os.Exit(m.Run())
}

// helper is a copy of the test binary running workerHelper (see TestMain).
type helper = testproc.Child

func startHelper(t *testing.T, mode, dir, name, stage string) *helper {
	t.Helper()
	return testproc.Start(t, helperEnv+"="+mode, helperDirEnv+"="+dir, helperNameEnv+"="+name, helperStageEnv+"="+stage)
}
