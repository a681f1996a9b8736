package etcdstore

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"time"

	"github.com/cockroachdb/errors"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/oduflow/oduflow-go/internal/errmark"
	"github.com/oduflow/oduflow-go/oduflow/catalog"
	"github.com/oduflow/oduflow-go/receipt"
)

// An execution and its request id index are created in one transaction If(CreateRevision == 0) on both
// keys; a pointer's index and the execution listing it in one transaction fenced on the execution's mod
// revision. So a request id is an execution or a pointer exactly when its index says so, and replicas
// racing one request id store one snapshot.

// pointerErr says which execution a pointer request id points to (it matches catalog.ErrInvalid).
func pointerErr(requestID, executionID string) error {
	return errmark.Mark(errors.Newf("etcdstore: catalog: request %s points to execution %s", errors.Safe(requestID),
		errors.Safe(executionID)), catalog.ErrInvalid)
}

func decodeRID(kv *mvccpb.KeyValue, requestID string) (catRID, error) {
	var r catRID
	if err := catDecode(kv.Value, "request index", &r); err != nil {
		return catRID{}, err
	}
	if r.RequestID != requestID || (r.Kind != catKindExecution && r.Kind != catKindPointer) ||
		receipt.ValidateMinionID(r.MinionID) != nil || receipt.ValidateRequestID(r.ExecutionID) != nil ||
		(r.Kind == catKindExecution) != (r.ExecutionID == requestID) {
		return catRID{}, catCorrupt("request index does not match its key")
	}
	return r, nil
}

// readRID reads a request id's index record and its mod revision (ErrNotFound when the id is unused).
func (c *catalogStore) readRID(ctx context.Context, requestID string) (catRID, int64, error) {
	if err := checkCatalogID("request id", requestID); err != nil {
		return catRID{}, 0, err
	}
	kv, found, err := c.read(ctx, c.ridKey(requestID), "request index")
	if err != nil {
		return catRID{}, 0, err
	}
	if !found {
		return catRID{}, 0, errors.Wrap(catalog.ErrNotFound, "etcdstore: catalog: request id")
	}
	r, err := decodeRID(kv, requestID)
	return r, kv.ModRevision, err
}

func decodeExecution(kv *mvccpb.KeyValue, minionID, requestID string) (catalog.Execution, error) {
	return decodeRecord(kv.Value, "execution",
		func(e *catalog.Execution) bool { return e.RequestID == requestID && e.MinionID == minionID },
		func(e *catalog.Execution) error { return e.ValidateStored() })
}

// execution reads one execution snapshot and its mod revision.
func (c *catalogStore) execution(ctx context.Context, minionID, requestID string) (catalog.Execution, int64, error) {
	kv, found, err := c.read(ctx, c.exeKey(minionID, requestID), "execution")
	if err != nil {
		return catalog.Execution{}, 0, err
	}
	if !found {
		return catalog.Execution{}, 0, catCorrupt("request index without its execution")
	}
	e, err := decodeExecution(kv, minionID, requestID)
	return e, kv.ModRevision, err
}

// LockServer implements catalog.Store: the key PREFIX/locks/server/<minion id> on an etcd lease of its
// own, kept alive by the Store's session machinery. A holder that dies or is cut off releases it when
// the lease's TTL runs out; waiting for another holder gives up after catalogLockWait
// (claims.ErrLeaseBusy).
func (c *catalogStore) LockServer(ctx context.Context, minionID string) (func() error, error) {
	if err := checkCatalogMinion(minionID); err != nil {
		return nil, err
	}
	l, err := c.s.acquire(ctx, c.s.prefix+serverLocksDir+minionID, catalogLockWait, "server lock")
	if err != nil {
		return nil, err
	}
	return l.Release, nil
}

// CreateExecution implements catalog.Store.
func (c *catalogStore) CreateExecution(ctx context.Context, e catalog.Execution) (catalog.Execution, error) {
	if err := ctx.Err(); err != nil {
		return catalog.Execution{}, errors.Wrap(err, "etcdstore: catalog")
	}
	if err := e.Validate(); err != nil {
		return catalog.Execution{}, err
	}
	e.Source, e.Canonical, e.Pointers = bytes.Clone(e.Source), bytes.Clone(e.Canonical), nil
	if e.CreatedAt.IsZero() {
		e.CreatedAt = time.Now()
	}
	e.CreatedAt = e.CreatedAt.UTC()
	e.Outcome = catalog.Outcome{Status: receipt.StatusNotStarted, UpdatedAt: e.CreatedAt}
	want := catRID{RequestID: e.RequestID, Kind: catKindExecution, MinionID: e.MinionID, ExecutionID: e.RequestID}
	ridData, err := catEncode(want)
	if err != nil {
		return catalog.Execution{}, err
	}
	exeData, err := catEncode(e)
	if err != nil {
		return catalog.Execution{}, err
	}
	rkey, ekey := c.ridKey(e.RequestID), c.exeKey(e.MinionID, e.RequestID)
	ok, err := c.commit(ctx, "create execution",
		[]clientv3.Cmp{clientv3.Compare(clientv3.CreateRevision(rkey), "=", 0),
			clientv3.Compare(clientv3.CreateRevision(ekey), "=", 0)},
		clientv3.OpPut(rkey, ridData), clientv3.OpPut(ekey, exeData))
	if err != nil || ok {
		return e, err
	}
	// The request id is taken: the identical snapshot again is the stored one, anything else ErrExists.
	r, _, err := c.readRID(ctx, e.RequestID)
	if errors.Is(err, catalog.ErrNotFound) {
		return catalog.Execution{}, catCorrupt("execution without its request index")
	}
	if err != nil {
		return catalog.Execution{}, err
	}
	if r != want {
		return catalog.Execution{}, errors.Wrap(catalog.ErrExists, "etcdstore: catalog: request id already used")
	}
	cur, _, err := c.execution(ctx, e.MinionID, e.RequestID)
	if err != nil {
		return catalog.Execution{}, err
	}
	if !cur.SameSnapshot(e) {
		return catalog.Execution{}, errors.Wrap(catalog.ErrExists, "etcdstore: catalog: another snapshot holds this request id")
	}
	return cur, nil
}

// Execution implements catalog.Store.
func (c *catalogStore) Execution(ctx context.Context, requestID string) (catalog.Execution, error) {
	r, _, err := c.readRID(ctx, requestID)
	if err != nil {
		return catalog.Execution{}, err
	}
	if r.Kind == catKindPointer {
		return catalog.Execution{}, pointerErr(requestID, r.ExecutionID)
	}
	e, _, err := c.execution(ctx, r.MinionID, requestID)
	return e, err
}

// Resolve implements catalog.Store.
func (c *catalogStore) Resolve(ctx context.Context, requestID string) (catalog.Execution, bool, error) {
	r, _, err := c.readRID(ctx, requestID)
	if err != nil {
		return catalog.Execution{}, false, err
	}
	e, _, err := c.execution(ctx, r.MinionID, r.ExecutionID)
	if err != nil {
		return catalog.Execution{}, false, err
	}
	return e, r.Kind == catKindPointer, nil
}

// Executions implements catalog.Store.
func (c *catalogStore) Executions(ctx context.Context, minionID string) ([]catalog.Execution, error) {
	if err := checkCatalogMinion(minionID); err != nil {
		return nil, err
	}
	dir := c.s.prefix + catExeDir + minionID + "/"
	kvs, err := c.list(ctx, dir, "executions")
	if err != nil {
		return nil, err
	}
	out := make([]catalog.Execution, 0, len(kvs))
	for _, kv := range kvs {
		e, err := decodeExecution(kv, minionID, strings.TrimPrefix(string(kv.Key), dir))
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	slices.SortFunc(out, func(a, b catalog.Execution) int {
		return cmpCreated(a.CreatedAt, b.CreatedAt, a.RequestID, b.RequestID)
	})
	return out, nil
}

// AddPointer implements catalog.Store: the pointer's request index (created If(CreateRevision == 0)) and
// the execution listing it (fenced on its mod revision) in one transaction.
func (c *catalogStore) AddPointer(ctx context.Context, executionID, pointerRequestID, reason string) (catalog.Execution, error) {
	if err := (catalog.Pointer{RequestID: pointerRequestID, Reason: reason}).Validate(); err != nil {
		return catalog.Execution{}, err
	}
	if pointerRequestID == executionID {
		return catalog.Execution{}, catInvalid("an execution cannot point to itself")
	}
	r, _, err := c.readRID(ctx, executionID)
	if err != nil {
		return catalog.Execution{}, err
	}
	if r.Kind != catKindExecution {
		return catalog.Execution{}, pointerErr(executionID, r.ExecutionID)
	}
	want := catRID{RequestID: pointerRequestID, Kind: catKindPointer, MinionID: r.MinionID, ExecutionID: executionID}
	ridData, err := catEncode(want)
	if err != nil {
		return catalog.Execution{}, err
	}
	rkey, ekey := c.ridKey(pointerRequestID), c.exeKey(r.MinionID, executionID)
	return retry(ctx, "add pointer", func() (catalog.Execution, bool, error) {
		e, rev, err := c.execution(ctx, r.MinionID, executionID)
		if err != nil {
			return catalog.Execution{}, false, err
		}
		cmps := []clientv3.Cmp{clientv3.Compare(clientv3.ModRevision(ekey), "=", rev)}
		var ops []clientv3.Op
		pkv, pfound, err := c.read(ctx, rkey, "request index")
		if err != nil {
			return catalog.Execution{}, false, err
		}
		if pfound {
			pr, err := decodeRID(pkv, pointerRequestID)
			if err != nil {
				return catalog.Execution{}, false, err
			}
			if pr != want {
				return catalog.Execution{}, false, errors.Wrap(catalog.ErrExists, "etcdstore: catalog: request id already used")
			}
			cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(rkey), "=", pkv.ModRevision))
		} else {
			cmps = append(cmps, clientv3.Compare(clientv3.CreateRevision(rkey), "=", 0))
			ops = append(ops, clientv3.OpPut(rkey, ridData))
		}
		listed := slices.ContainsFunc(e.Pointers, func(p catalog.Pointer) bool { return p.RequestID == pointerRequestID })
		if listed && pfound {
			return e, true, nil // the same pair again
		}
		if !listed {
			if len(e.Pointers) >= maxCatalogPointers {
				return catalog.Execution{}, false, catInvalid("too many pointers on one execution")
			}
			e.Pointers = append(e.Pointers, catalog.Pointer{RequestID: pointerRequestID, Reason: reason,
				CreatedAt: time.Now().UTC()})
			data, err := catEncode(e)
			if err != nil {
				return catalog.Execution{}, false, err
			}
			ops = append(ops, clientv3.OpPut(ekey, data))
		}
		ok, err := c.commit(ctx, "add pointer", cmps, ops...)
		return e, ok, err
	})
}

// RecordOutcome implements catalog.Store: fenced on the execution's mod revision; a final outcome
// (catalog.Outcome.Final) is never replaced by a different one (catalog.ErrExists).
func (c *catalogStore) RecordOutcome(ctx context.Context, requestID string, o catalog.Outcome) (catalog.Execution, error) {
	if err := o.Validate(); err != nil {
		return catalog.Execution{}, err
	}
	r, _, err := c.readRID(ctx, requestID)
	if err != nil {
		return catalog.Execution{}, err
	}
	if r.Kind != catKindExecution {
		return catalog.Execution{}, pointerErr(requestID, r.ExecutionID)
	}
	ekey := c.exeKey(r.MinionID, requestID)
	return retry(ctx, "record outcome", func() (catalog.Execution, bool, error) {
		e, rev, err := c.execution(ctx, r.MinionID, requestID)
		if err != nil {
			return catalog.Execution{}, false, err
		}
		if e.Outcome.Same(o) {
			return e, true, nil
		}
		if e.Outcome.Final() {
			return catalog.Execution{}, false, errors.Wrapf(catalog.ErrExists,
				"etcdstore: catalog: confirmed outcome of execution %s is immutable (%s)", errors.Safe(requestID),
				errors.Safe(string(e.Outcome.Status)))
		}
		o.UpdatedAt = time.Now().UTC()
		e.Outcome = o
		data, err := catEncode(e)
		if err != nil {
			return catalog.Execution{}, false, err
		}
		ok, err := c.commit(ctx, "record outcome",
			[]clientv3.Cmp{clientv3.Compare(clientv3.ModRevision(ekey), "=", rev)}, clientv3.OpPut(ekey, data))
		return e, ok, err
	})
}
