package etcdstore

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"
	"strings"
	"time"

	"github.com/cockroachdb/errors"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/oduflow/oduflow-go/internal/errmark"
	"github.com/oduflow/oduflow-go/internal/strictjson"
	"github.com/oduflow/oduflow-go/oduflow/catalog"
	"github.com/oduflow/oduflow-go/receipt"
)

// Key layout of the custom catalog under the prefix (see the package documentation):
//
//	PREFIX/catalog/def/<definition id>              definition
//	PREFIX/catalog/name/<sha256(company)>/<sha256(name)>  name index: the definition holding the name
//	PREFIX/catalog/asg/<minion id>/<definition id>  assignment
//	PREFIX/catalog/rid/<request id>                 request id index: execution or pointer
//	PREFIX/catalog/exe/<minion id>/<request id>     execution snapshot (+ pointers, outcome)
//	PREFIX/locks/server/<minion id>                 LockServer, attached to an etcd lease
const (
	catDefDir        = "/catalog/def/"
	catNameDir       = "/catalog/name/"
	catAsgDir        = "/catalog/asg/"
	catRIDDir        = "/catalog/rid/"
	catExeDir        = "/catalog/exe/"
	serverLocksDir   = "/locks/server/"
	catKindExecution = "execution"
	catKindPointer   = "pointer"
)

// Bounds of the catalog on etcd.
const (
	// maxCatalogRecordSize bounds a catalog record written or read back. It stays below etcd's default
	// --max-request-bytes (1.5 MiB) with the rest of the transaction that writes it.
	maxCatalogRecordSize = 1 << 20
	// catalogLockWait is how long LockServer waits for another holder (as the file catalog's lock wait).
	catalogLockWait = 10 * time.Second
	// casAttempts bounds the retries of a fenced update that lost a race.
	casAttempts = 64
	// maxCatalogPointers bounds the pointers of one execution (the file catalog's bound).
	maxCatalogPointers = 10000
)

// catalogStore is the etcd catalog.Store: one key per record, creates fenced on create revision 0 and
// updates on the mod revision read, several records of one operation in one transaction.
type catalogStore struct {
	s *Store
}

var _ catalog.Store = (*catalogStore)(nil)

// Catalog returns the custom catalog (catalog.Store) kept in this store's cluster under its prefix, next
// to the claims, so that replicas sharing the claims share definitions, executions and the per-server
// lock. Sources are validated and compiled with catalog.Compile, as by catalog.Open. Errors match the catalog's sentinels (catalog.ErrNotFound, ErrExists,
// ErrInvalid, ErrCorrupt); a write whose acknowledgement was lost matches ErrOutcomeUnknown, a failed read
// claims.ErrClaimStore. The catalog lives as long as the Store.
func (s *Store) Catalog() (_ catalog.Store, err error) {
	defer errmark.Boundary(&err)
	return &catalogStore{s: s}, nil
}

func hashHex(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

func (c *catalogStore) defKey(id string) string { return c.s.prefix + catDefDir + id }
func (c *catalogStore) nameKey(company, name string) string {
	return c.s.prefix + catNameDir + hashHex(company) + "/" + hashHex(name)
}
func (c *catalogStore) asgKey(defID, minion string) string {
	return c.s.prefix + catAsgDir + minion + "/" + defID
}
func (c *catalogStore) ridKey(request string) string { return c.s.prefix + catRIDDir + request }
func (c *catalogStore) exeKey(minion, request string) string {
	return c.s.prefix + catExeDir + minion + "/" + request
}

// catNameIndex reserves a (company, name) for one definition.
type catNameIndex struct {
	Company      string `json:"company"`
	Name         string `json:"name"`
	DefinitionID string `json:"definition_id"`
}

// catRID reserves a request id, once, for an execution or a pointer.
type catRID struct {
	RequestID   string `json:"request_id"`
	Kind        string `json:"kind"`
	MinionID    string `json:"minion_id"`
	ExecutionID string `json:"execution_id"`
}

func catCorrupt(format string, args ...any) error {
	return errmark.Mark(errors.Newf("etcdstore: catalog: "+format, args...), catalog.ErrCorrupt)
}

func catInvalid(format string, args ...any) error {
	return errmark.Mark(errors.Newf("etcdstore: catalog: "+format, args...), catalog.ErrInvalid)
}

// catEncode returns a record's JSON; a record larger than maxCatalogRecordSize is refused (ErrInvalid):
// etcd would refuse it, or it could not be read back.
func catEncode(v any) (string, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return "", errors.Wrap(err, "etcdstore: catalog: encode")
	}
	if buf.Len() > maxCatalogRecordSize {
		return "", catInvalid("record of %d bytes exceeds %d", errors.Safe(buf.Len()), errors.Safe(maxCatalogRecordSize))
	}
	return buf.String(), nil
}

// catDecode decodes a stored record strictly: bounded size, one JSON object without repeated (also
// case-folded) keys or trailing data, known fields only. Anything else is ErrCorrupt, never a panic.
func catDecode(data []byte, what string, v any) error {
	if len(data) > maxCatalogRecordSize {
		return catCorrupt("%s record of %d bytes exceeds the cap", errors.Safe(what), errors.Safe(len(data)))
	}
	if err := strictjson.Check(data, strictjson.FoldCase()); err != nil {
		return errmark.Mark(errors.Wrapf(err, "etcdstore: catalog: decode %s", errors.Safe(what)), catalog.ErrCorrupt)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return errmark.Mark(errors.Wrapf(err, "etcdstore: catalog: decode %s", errors.Safe(what)), catalog.ErrCorrupt)
	}
	return nil
}

// read is a linearizable Get of one record: its value and mod revision, or found false.
func (c *catalogStore) read(ctx context.Context, key, what string) (kv *mvccpb.KeyValue, found bool, err error) {
	if err := ctx.Err(); err != nil {
		return nil, false, errors.Wrap(err, "etcdstore: catalog")
	}
	resp, err := c.s.cli.Get(ctx, key)
	if err != nil {
		return nil, false, readErr(err, "read catalog "+what)
	}
	if len(resp.Kvs) == 0 {
		return nil, false, nil
	}
	return resp.Kvs[0], true, nil
}

// list reads every record under dir (one read, one revision). Keys longer than MaxKeySize are corrupt.
func (c *catalogStore) list(ctx context.Context, dir, what string) ([]*mvccpb.KeyValue, error) {
	if err := ctx.Err(); err != nil {
		return nil, errors.Wrap(err, "etcdstore: catalog")
	}
	resp, err := c.s.cli.Get(ctx, dir, clientv3.WithPrefix())
	if err != nil {
		return nil, readErr(err, "list catalog "+what)
	}
	for _, kv := range resp.Kvs {
		if len(kv.Key) > MaxKeySize {
			return nil, catCorrupt("%s key of %d bytes exceeds the cap", errors.Safe(what), errors.Safe(len(kv.Key)))
		}
	}
	return resp.Kvs, nil
}

// commit runs one transaction; ok false when a compare failed.
func (c *catalogStore) commit(ctx context.Context, what string, cmps []clientv3.Cmp, ops ...clientv3.Op) (bool, error) {
	resp, err := c.s.cli.Txn(ctx).If(cmps...).Then(ops...).Commit()
	if err != nil {
		return false, writeErr(err, "catalog "+what)
	}
	return resp.Succeeded, nil
}

// retry runs attempt until it reports done, at most casAttempts times (each failed attempt lost a race
// to another writer, which made progress).
func retry[T any](ctx context.Context, what string, attempt func() (T, bool, error)) (T, error) {
	var zero T
	for range casAttempts {
		v, done, err := attempt()
		if err != nil || done {
			return v, err
		}
		if err := ctx.Err(); err != nil {
			return zero, errors.Wrap(err, "etcdstore: catalog")
		}
	}
	return zero, errors.Newf("etcdstore: catalog %s: %d attempts lost to concurrent writers", errors.Safe(what),
		errors.Safe(casAttempts))
}

func checkCatalogID(what, id string) error {
	if err := receipt.ValidateRequestID(id); err != nil {
		return errmark.Mark(errors.Wrapf(err, "etcdstore: catalog: invalid %s", errors.Safe(what)), catalog.ErrInvalid)
	}
	return nil
}

func checkCatalogMinion(id string) error {
	if err := receipt.ValidateMinionID(id); err != nil {
		return errmark.Mark(errors.Wrap(err, "etcdstore: catalog: invalid minion id"), catalog.ErrInvalid)
	}
	return nil
}

// decodeRecord decodes a stored record strictly (catDecode), checks that it is the record of its key
// (own) and valid by the catalog's rules (valid): anything else is catalog.ErrCorrupt.
func decodeRecord[T any](data []byte, what string, own func(*T) bool, valid func(*T) error) (T, error) {
	var v, zero T
	if err := catDecode(data, what, &v); err != nil {
		return zero, err
	}
	if !own(&v) {
		return zero, catCorrupt("%s record does not match its key", errors.Safe(what))
	}
	if err := valid(&v); err != nil {
		return zero, errmark.Mark(errors.Wrapf(err, "etcdstore: catalog: %s record", errors.Safe(what)), catalog.ErrCorrupt)
	}
	return v, nil
}

func decodeDefinition(kv *mvccpb.KeyValue, id string) (catalog.Definition, error) {
	return decodeRecord(kv.Value, "definition", func(d *catalog.Definition) bool { return d.ID == id },
		func(d *catalog.Definition) error { return d.Validate() })
}

// definition reads one definition and its mod revision.
func (c *catalogStore) definition(ctx context.Context, id string) (catalog.Definition, int64, error) {
	if err := checkCatalogID("definition id", id); err != nil {
		return catalog.Definition{}, 0, err
	}
	kv, found, err := c.read(ctx, c.defKey(id), "definition")
	if err != nil {
		return catalog.Definition{}, 0, err
	}
	if !found {
		return catalog.Definition{}, 0, errors.Wrap(catalog.ErrNotFound, "etcdstore: catalog: definition")
	}
	d, err := decodeDefinition(kv, id)
	return d, kv.ModRevision, err
}

// Definition implements catalog.Store.
func (c *catalogStore) Definition(ctx context.Context, id string) (catalog.Definition, error) {
	d, _, err := c.definition(ctx, id)
	return d, err
}

// Definitions implements catalog.Store.
func (c *catalogStore) Definitions(ctx context.Context) ([]catalog.Definition, error) {
	dir := c.s.prefix + catDefDir
	kvs, err := c.list(ctx, dir, "definitions")
	if err != nil {
		return nil, err
	}
	out := make([]catalog.Definition, 0, len(kvs))
	for _, kv := range kvs {
		d, err := decodeDefinition(kv, strings.TrimPrefix(string(kv.Key), dir))
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	slices.SortFunc(out, func(a, b catalog.Definition) int {
		return cmpCreated(a.CreatedAt, b.CreatedAt, a.ID, b.ID)
	})
	return out, nil
}

// cmpCreated orders by creation time, then by id (the catalog's list order).
func cmpCreated(a, b time.Time, aID, bID string) int {
	if c := a.Compare(b); c != 0 {
		return c
	}
	return strings.Compare(aID, bID)
}

func decodeAssignment(kv *mvccpb.KeyValue, defID, minion string) (catalog.Assignment, error) {
	return decodeRecord(kv.Value, "assignment",
		func(a *catalog.Assignment) bool { return a.DefinitionID == defID && a.MinionID == minion },
		func(a *catalog.Assignment) error { return a.Validate() })
}

// Assignment implements catalog.Store.
func (c *catalogStore) Assignment(ctx context.Context, definitionID, minionID string) (catalog.Assignment, error) {
	if err := checkCatalogID("definition id", definitionID); err != nil {
		return catalog.Assignment{}, err
	}
	if err := checkCatalogMinion(minionID); err != nil {
		return catalog.Assignment{}, err
	}
	kv, found, err := c.read(ctx, c.asgKey(definitionID, minionID), "assignment")
	if err != nil {
		return catalog.Assignment{}, err
	}
	if !found {
		return catalog.Assignment{}, errors.Wrap(catalog.ErrNotFound, "etcdstore: catalog: assignment")
	}
	a, err := decodeAssignment(kv, definitionID, minionID)
	if err != nil {
		return catalog.Assignment{}, err
	}
	return a, c.checkTenancy(ctx, a, nil)
}

// checkTenancy checks a stored assignment against its definition (catalog.Assignment.CheckDefinition): a crossed
// record, or one whose definition is missing, is catalog.ErrCorrupt. seen caches definitions by id.
func (c *catalogStore) checkTenancy(ctx context.Context, a catalog.Assignment, seen map[string]catalog.Definition) error {
	d, ok := seen[a.DefinitionID]
	if !ok {
		var err error
		d, _, err = c.definition(ctx, a.DefinitionID)
		if errors.Is(err, catalog.ErrNotFound) {
			return errors.Wrap(catalog.ErrCorrupt, "etcdstore: catalog: assignment of a missing definition")
		}
		if err != nil {
			return err
		}
		if seen != nil {
			seen[a.DefinitionID] = d
		}
	}
	return a.CheckDefinition(d)
}

// Assignments implements catalog.Store.
func (c *catalogStore) Assignments(ctx context.Context, minionID string) ([]catalog.Assignment, error) {
	dir := c.s.prefix + catAsgDir
	if minionID != "" {
		if err := checkCatalogMinion(minionID); err != nil {
			return nil, err
		}
		dir += minionID + "/"
	}
	kvs, err := c.list(ctx, dir, "assignments")
	if err != nil {
		return nil, err
	}
	out := make([]catalog.Assignment, 0, len(kvs))
	defs := make(map[string]catalog.Definition)
	for _, kv := range kvs {
		minion, defID, ok := strings.Cut(strings.TrimPrefix(string(kv.Key), c.s.prefix+catAsgDir), "/")
		if !ok {
			return nil, catCorrupt("assignment key")
		}
		a, err := decodeAssignment(kv, defID, minion)
		if err != nil {
			return nil, err
		}
		if err := c.checkTenancy(ctx, a, defs); err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	slices.SortFunc(out, func(a, b catalog.Assignment) int {
		if c := strings.Compare(a.MinionID, b.MinionID); c != 0 {
			return c
		}
		return cmpCreated(a.CreatedAt, b.CreatedAt, a.DefinitionID, b.DefinitionID)
	})
	return out, nil
}
