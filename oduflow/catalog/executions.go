package catalog

import (
	"context"
	"sort"
	"strings"

	"github.com/cockroachdb/errors"

	"github.com/oduflow/oduflow-go/internal/errmark"
	"github.com/oduflow/oduflow-go/receipt"
)

func ridName(requestID string) string { return "rid." + requestID + ".json" }

func exeName(minionID, requestID string) string { return "exe." + minionID + "." + requestID + ".json" }

func srvLockName(minionID string) string { return "srv." + minionID }

// Index kinds of a request id.
const (
	kindExecution = "execution"
	kindPointer   = "pointer"
)

// ridRecord reserves a request id, once, for an execution or a pointer.
type ridRecord struct {
	RequestID   string `json:"request_id"`
	Kind        string `json:"kind"`
	MinionID    string `json:"minion_id"`
	ExecutionID string `json:"execution_id"`
}

// pointerError says which execution a pointer request id points to.
type pointerError struct {
	RequestID, ExecutionID string
}

func (e *pointerError) Error() string {
	return "catalog: request " + e.RequestID + " points to execution " + e.ExecutionID
}

// Unwrap makes errors.Is(err, errPointer) true.
func (e *pointerError) Unwrap() error { return errPointer }

// LockServer implements Store.
func (s *FileStore) LockServer(ctx context.Context, minionID string) (_ func() error, err error) {
	defer errmark.Boundary(&err)
	if err := checkMinion(minionID); err != nil {
		return nil, err
	}
	l, err := s.lock(ctx, srvLockName(minionID))
	if err != nil {
		return nil, err
	}
	return l.Release, nil
}

func (s *FileStore) readRID(ctx context.Context, requestID string) (ridRecord, error) {
	if err := ctxErr(ctx); err != nil {
		return ridRecord{}, err
	}
	if err := checkID("request id", requestID); err != nil {
		return ridRecord{}, err
	}
	var r ridRecord
	if err := s.readJSON(ridName(requestID), &r); err != nil {
		return ridRecord{}, err
	}
	if r.RequestID != requestID || (r.Kind != kindExecution && r.Kind != kindPointer) ||
		receipt.ValidateMinionID(r.MinionID) != nil || receipt.ValidateRequestID(r.ExecutionID) != nil ||
		(r.Kind == kindExecution) != (r.ExecutionID == requestID) {
		return ridRecord{}, errors.Wrap(ErrCorrupt, "catalog: request index")
	}
	return r, nil
}

// reserve creates the request id index, or accepts an identical existing one (resume after a crash).
func (s *FileStore) reserve(ctx context.Context, r ridRecord) error {
	err := s.createJSON(ridName(r.RequestID), &r)
	if !errors.Is(err, ErrExists) {
		return err
	}
	cur, rerr := s.readRID(ctx, r.RequestID)
	if rerr != nil {
		return rerr
	}
	if cur != r {
		return errors.Wrap(err, "catalog: request id already used")
	}
	return nil
}

func (s *FileStore) readExecution(minionID, requestID string) (Execution, error) {
	var e Execution
	if err := s.readJSON(exeName(minionID, requestID), &e); err != nil {
		return Execution{}, err
	}
	if e.RequestID != requestID || e.MinionID != minionID {
		return Execution{}, errors.Wrap(ErrCorrupt, "catalog: execution does not match its name")
	}
	return e, nil
}

// CreateExecution implements Store.
func (s *FileStore) CreateExecution(ctx context.Context, e Execution) (_ Execution, err error) {
	defer errmark.Boundary(&err)
	if err := ctxErr(ctx); err != nil {
		return Execution{}, err
	}
	if err := e.Validate(); err != nil {
		return Execution{}, err
	}
	e = e.clone()
	e.Pointers = nil
	if e.CreatedAt.IsZero() {
		e.CreatedAt = s.stamp()
	}
	e.CreatedAt = e.CreatedAt.UTC()
	e.Outcome = Outcome{Status: receipt.StatusNotStarted, UpdatedAt: e.CreatedAt}
	if err := s.reserve(ctx, ridRecord{RequestID: e.RequestID, Kind: kindExecution, MinionID: e.MinionID,
		ExecutionID: e.RequestID}); err != nil {
		return Execution{}, err
	}
	err = s.createJSON(exeName(e.MinionID, e.RequestID), &e)
	if errors.Is(err, ErrExists) {
		cur, rerr := s.readExecution(e.MinionID, e.RequestID)
		if rerr != nil {
			return Execution{}, rerr
		}
		if !cur.SameSnapshot(e) {
			return Execution{}, errors.Wrap(err, "catalog: another snapshot holds this request id")
		}
		return cur, nil
	}
	if err != nil {
		return Execution{}, err
	}
	return e.clone(), nil
}

// Execution implements Store.
func (s *FileStore) Execution(ctx context.Context, requestID string) (_ Execution, err error) {
	defer errmark.Boundary(&err)
	r, err := s.readRID(ctx, requestID)
	if err != nil {
		return Execution{}, err
	}
	if r.Kind == kindPointer {
		return Execution{}, &pointerError{RequestID: requestID, ExecutionID: r.ExecutionID}
	}
	return s.readExecution(r.MinionID, requestID)
}

// Resolve implements Store.
func (s *FileStore) Resolve(ctx context.Context, requestID string) (_ Execution, _ bool, err error) {
	defer errmark.Boundary(&err)
	r, err := s.readRID(ctx, requestID)
	if err != nil {
		return Execution{}, false, err
	}
	e, err := s.readExecution(r.MinionID, r.ExecutionID)
	if err != nil {
		return Execution{}, false, err
	}
	return e, r.Kind == kindPointer, nil
}

// Executions implements Store.
func (s *FileStore) Executions(ctx context.Context, minionID string) (_ []Execution, err error) {
	defer errmark.Boundary(&err)
	if err := ctxErr(ctx); err != nil {
		return nil, err
	}
	if err := checkMinion(minionID); err != nil {
		return nil, err
	}
	prefix := "exe." + minionID + "."
	names, err := s.st.List(prefix)
	if err != nil {
		return nil, errors.Wrap(err, "catalog: list executions")
	}
	out := make([]Execution, 0, len(names))
	for _, n := range names {
		req, ok := strings.CutSuffix(strings.TrimPrefix(n, prefix), ".json")
		if !ok || receipt.ValidateRequestID(req) != nil {
			continue
		}
		e, err := s.readExecution(minionID, req)
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	sortExecutions(out)
	return out, nil
}

func sortExecutions(out []Execution) {
	sort.Slice(out, func(i, j int) bool {
		if !out[i].CreatedAt.Equal(out[j].CreatedAt) {
			return out[i].CreatedAt.Before(out[j].CreatedAt)
		}
		return out[i].RequestID < out[j].RequestID
	})
}

func (s *FileStore) updateExecution(ctx context.Context, minionID, requestID string,
	f func(*Execution) (bool, error)) (e Execution, err error) {
	l, err := s.lock(ctx, exeName(minionID, requestID))
	if err != nil {
		return Execution{}, err
	}
	defer release(l, &err)
	if e, err = s.readExecution(minionID, requestID); err != nil {
		return Execution{}, err
	}
	changed, err := f(&e)
	if err != nil || !changed {
		return e, err
	}
	if err := s.writeJSON(exeName(minionID, requestID), &e); err != nil {
		return Execution{}, err
	}
	return e.clone(), nil
}

// AddPointer implements Store.
func (s *FileStore) AddPointer(ctx context.Context, executionID, pointerRequestID, reason string) (_ Execution, err error) {
	defer errmark.Boundary(&err)
	if err := (Pointer{RequestID: pointerRequestID, Reason: reason}).Validate(); err != nil {
		return Execution{}, err
	}
	if pointerRequestID == executionID {
		return Execution{}, invalidf("catalog: an execution cannot point to itself")
	}
	r, err := s.readRID(ctx, executionID)
	if err != nil {
		return Execution{}, err
	}
	if r.Kind != kindExecution {
		return Execution{}, &pointerError{RequestID: executionID, ExecutionID: r.ExecutionID}
	}
	if err := s.reserve(ctx, ridRecord{RequestID: pointerRequestID, Kind: kindPointer, MinionID: r.MinionID,
		ExecutionID: executionID}); err != nil {
		return Execution{}, err
	}
	return s.updateExecution(ctx, r.MinionID, executionID, func(e *Execution) (bool, error) {
		for _, p := range e.Pointers {
			if p.RequestID == pointerRequestID {
				return false, nil
			}
		}
		if len(e.Pointers) >= maxPointers {
			return false, invalidf("catalog: too many pointers on one execution")
		}
		e.Pointers = append(e.Pointers, Pointer{RequestID: pointerRequestID, Reason: reason, CreatedAt: s.stamp()})
		return true, nil
	})
}

// RecordOutcome implements Store.
func (s *FileStore) RecordOutcome(ctx context.Context, requestID string, o Outcome) (_ Execution, err error) {
	defer errmark.Boundary(&err)
	if err := o.Validate(); err != nil {
		return Execution{}, err
	}
	r, err := s.readRID(ctx, requestID)
	if err != nil {
		return Execution{}, err
	}
	if r.Kind != kindExecution {
		return Execution{}, &pointerError{RequestID: requestID, ExecutionID: r.ExecutionID}
	}
	return s.updateExecution(ctx, r.MinionID, requestID, func(e *Execution) (bool, error) {
		if e.Outcome.Same(o) {
			return false, nil
		}
		if e.Outcome.Final() {
			return false, errors.Wrapf(errImmutable, "catalog: execution %s is %s",
				errors.Safe(requestID), errors.Safe(string(e.Outcome.Status)))
		}
		o.UpdatedAt = s.stamp()
		e.Outcome = o
		return true, nil
	})
}
