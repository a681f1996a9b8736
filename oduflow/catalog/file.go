package catalog

import (
	"bytes"
	"context"
	"encoding/json"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/oduflow/oduflow-go/internal/errmark"
	"github.com/oduflow/oduflow-go/internal/safefile"
	"github.com/oduflow/oduflow-go/internal/strictjson"

	"github.com/cockroachdb/errors"

	"github.com/oduflow/oduflow-go/receipt"
)

// Limits on free-text fields.
const (
	maxCompanyLen = 128
	maxNameLen    = 200
	// maxPointers bounds the pointers recorded on one execution (a reused execution refuses more).
	maxPointers = 10000
)

// maxRecordSize bounds a stored record (an execution holds up to 64 KiB of source and its payload).
const maxRecordSize = 8 << 20

// maxSnapshotBytes bounds the source and the canonical payload of an execution snapshot, each. Both are
// stored base64-encoded, so two of them plus maxPointers pointers stay well under maxRecordSize.
const maxSnapshotBytes = 1 << 20

// defaultLockWait is how long an update waits for a record lock.
const defaultLockWait = 10 * time.Second

// FileStore is the file-backed Store. It is safe for concurrent use by goroutines and processes sharing
// the directory.
type FileStore struct {
	st       *safefile.Store
	compile  func(source []byte) (Compiled, error)
	now      func() time.Time
	lockWait time.Duration
}

var _ Store = (*FileStore)(nil)

type options struct {
	create   bool
	now      func() time.Time
	lockWait time.Duration
	compile  func(source []byte) (Compiled, error)
}

// Option configures Open.
type Option func(*options)

// WithCreate creates the directory (mode 0700) when it is missing.
func WithCreate() Option { return func(o *options) { o.create = true } }

// withClock replaces time.Now (tests).
func withClock(now func() time.Time) Option { return func(o *options) { o.now = now } }

// withLockWait sets how long an update waits for a record lock (default defaultLockWait).
func withLockWait(d time.Duration) Option { return func(o *options) { o.lockWait = d } }

// withCompiler replaces Compile (tests whose sources are not custom states).
func withCompiler(compile func(source []byte) (Compiled, error)) Option {
	return func(o *options) { o.compile = compile }
}

// Open opens (or with WithCreate creates) a catalog directory. Sources are validated and compiled with
// Compile.
func Open(dir string, opts ...Option) (_ *FileStore, err error) {
	defer errmark.Boundary(&err)
	o := options{now: time.Now, lockWait: defaultLockWait, compile: Compile}
	for _, opt := range opts {
		opt(&o)
	}
	sopts := []safefile.StoreOption{safefile.WithMaxRecordSize(maxRecordSize)}
	if o.create {
		sopts = append(sopts, safefile.WithCreate())
	}
	st, err := safefile.OpenStore(dir, sopts...)
	if err != nil {
		return nil, errors.Wrap(err, "catalog: open store")
	}
	return &FileStore{st: st, compile: o.compile, now: o.now, lockWait: o.lockWait}, nil
}

// Dir returns the catalog directory.
func (s *FileStore) Dir() string { return s.st.Dir() }

func (s *FileStore) stamp() time.Time { return s.now().UTC() }

func (s *FileStore) lock(ctx context.Context, name string) (*safefile.Lock, error) {
	l, err := s.st.LockWait(ctx, name, s.lockWait)
	if err != nil {
		return nil, errors.Wrapf(err, "catalog: lock %s", errors.Safe(name))
	}
	return l, nil
}

func release(l *safefile.Lock, err *error) {
	if rerr := l.Release(); rerr != nil && *err == nil {
		*err = errors.Wrap(rerr, "catalog: release lock")
	}
}

// readJSON reads and strictly decodes a record. ErrNotFound when absent.
func (s *FileStore) readJSON(name string, v any) error {
	data, err := s.st.Read(name)
	if err != nil {
		if errors.Is(err, safefile.ErrNotExist) {
			return errmark.Mark(errors.Wrapf(err, "catalog: %s", errors.Safe(name)), ErrNotFound)
		}
		if errors.Is(err, safefile.ErrCorrupt) { // larger than the record cap, or changed while read
			return errmark.Mark(errors.Wrapf(err, "catalog: read %s", errors.Safe(name)), ErrCorrupt)
		}
		return errors.Wrapf(err, "catalog: read %s", errors.Safe(name))
	}
	// Duplicate keys (also case-folded ones, which encoding/json merges) and trailing data are refused
	// before decoding; unknown fields by the decoder: every catalog schema is closed.
	if err := strictjson.Check(data, strictjson.FoldCase()); err != nil {
		return errmark.Mark(errors.Wrapf(err, "catalog: decode %s", errors.Safe(name)), ErrCorrupt)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return errmark.Mark(errors.Wrapf(err, "catalog: decode %s", errors.Safe(name)), ErrCorrupt)
	}
	return nil
}

// encode returns the JSON form of a record. A record larger than maxRecordSize is refused (ErrInvalid):
// written, it could never be read back.
func encode(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, errors.Wrap(err, "catalog: encode")
	}
	if buf.Len() > maxRecordSize {
		return nil, invalidf("catalog: record of %d bytes exceeds %d", errors.Safe(buf.Len()), errors.Safe(maxRecordSize))
	}
	return buf.Bytes(), nil
}

func (s *FileStore) writeJSON(name string, v any) error {
	data, err := encode(v)
	if err != nil {
		return err
	}
	return errors.Wrapf(s.st.WriteAtomic(name, data), "catalog: write %s", errors.Safe(name))
}

// createJSON writes a record only if absent; ErrExists (marked) when present.
func (s *FileStore) createJSON(name string, v any) error {
	data, err := encode(v)
	if err != nil {
		return err
	}
	if err := s.st.CreateExclusive(name, data); err != nil {
		if errors.Is(err, safefile.ErrExist) {
			return errmark.Mark(errors.Wrapf(err, "catalog: %s", errors.Safe(name)), ErrExists)
		}
		return errors.Wrapf(err, "catalog: create %s", errors.Safe(name))
	}
	return nil
}

func validText(s string, maxLen int) bool {
	if s == "" || len(s) > maxLen || !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if unicode.IsControl(r) {
			return false
		}
	}
	return true
}

func checkCompany(c string) error {
	if !validText(c, maxCompanyLen) {
		return invalidf("catalog: invalid company")
	}
	return nil
}

func checkID(what, id string) error {
	if err := receipt.ValidateRequestID(id); err != nil {
		return errmark.Mark(errors.Wrapf(err, "catalog: invalid %s", errors.Safe(what)), ErrInvalid)
	}
	return nil
}

func checkMinion(id string) error {
	if err := receipt.ValidateMinionID(id); err != nil {
		return errmark.Mark(errors.Wrap(err, "catalog: invalid minion id"), ErrInvalid)
	}
	return nil
}

func ctxErr(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return errors.Wrap(err, "catalog")
	}
	return nil
}
