package etcdstore

import (
	"bytes"
	"context"
	"time"

	"github.com/cockroachdb/errors"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/oduflow/oduflow-go/internal/errmark"
	"github.com/oduflow/oduflow-go/oduflow/catalog"
	"github.com/oduflow/oduflow-go/receipt"
)

// One definition per company and name: the name index key and the definition it names are written in
// one transaction, created If(CreateRevision == 0), so any number of replicas racing one
// GetOrCreateDefinition create exactly one definition (the losers read the winner's). A Rename moves the
// index in the transaction that renames the definition.

func (c *catalogStore) compileSource(source []byte) (catalog.Compiled, error) {
	cp, err := catalog.Compile(source)
	if err != nil {
		// The compiler's error carries a code and a position, never the source.
		return catalog.Compiled{}, errmark.Mark(errors.Wrap(err, "etcdstore: catalog: compile"), catalog.ErrInvalid)
	}
	return cp, cp.Validate()
}

func decodeNameIndex(kv *mvccpb.KeyValue, company, name string) (catNameIndex, error) {
	var ix catNameIndex
	if err := catDecode(kv.Value, "name index", &ix); err != nil {
		return catNameIndex{}, err
	}
	if ix.Company != company || ix.Name != name || receipt.ValidateRequestID(ix.DefinitionID) != nil {
		return catNameIndex{}, catCorrupt("name index does not match its key")
	}
	return ix, nil
}

type defResult struct {
	d       catalog.Definition
	created bool
}

// CreateDefinition implements catalog.Store: a name the company already uses gives catalog.ErrExists.
func (c *catalogStore) CreateDefinition(ctx context.Context, company, name string, source []byte) (catalog.Definition, error) {
	r, err := c.getOrCreate(ctx, company, name, source, true)
	return r.d, err
}

// GetOrCreateDefinition implements catalog.Store, atomic across replicas.
func (c *catalogStore) GetOrCreateDefinition(ctx context.Context, company, name string, source []byte) (catalog.Definition, bool, error) {
	r, err := c.getOrCreate(ctx, company, name, source, false)
	return r.d, r.created, err
}

func (c *catalogStore) getOrCreate(ctx context.Context, company, name string, source []byte, mustCreate bool) (defResult, error) {
	if err := ctx.Err(); err != nil {
		return defResult{}, errors.Wrap(err, "etcdstore: catalog")
	}
	cp, err := c.compileSource(source)
	if err != nil {
		return defResult{}, err
	}
	now := time.Now().UTC()
	d := catalog.Definition{ID: receipt.NewRequestID(), Company: company, Name: name, Source: bytes.Clone(source),
		Revision: 1, Digest: cp.Digest, CreatedAt: now, UpdatedAt: now}
	if err := d.Validate(); err != nil {
		return defResult{}, err
	}
	nkey := c.nameKey(company, name)
	return retry(ctx, "create definition", func() (defResult, bool, error) {
		kv, found, err := c.read(ctx, nkey, "name index")
		if err != nil {
			return defResult{}, false, err
		}
		fence := clientv3.Compare(clientv3.CreateRevision(nkey), "=", 0)
		if found {
			ix, err := decodeNameIndex(kv, company, name)
			if err != nil {
				return defResult{}, false, err
			}
			h, herr := c.Definition(ctx, ix.DefinitionID)
			switch {
			case herr == nil && h.Company == company && h.Name == name:
				if mustCreate {
					return defResult{}, false, errors.Wrapf(catalog.ErrExists, "etcdstore: catalog: name held by definition %s",
						errors.Safe(h.ID))
				}
				return defResult{d: h}, true, nil
			case errors.Is(herr, catalog.ErrNotFound):
				d.ID = ix.DefinitionID // an index written without its definition: create it under that id
			case herr != nil:
				return defResult{}, false, herr
			}
			// A stale index (its definition carries another name) is replaced, fenced on its revision.
			fence = clientv3.Compare(clientv3.ModRevision(nkey), "=", kv.ModRevision)
		}
		ixData, err := catEncode(catNameIndex{Company: company, Name: name, DefinitionID: d.ID})
		if err != nil {
			return defResult{}, false, err
		}
		defData, err := catEncode(d)
		if err != nil {
			return defResult{}, false, err
		}
		ok, err := c.commit(ctx, "create definition",
			[]clientv3.Cmp{fence, clientv3.Compare(clientv3.CreateRevision(c.defKey(d.ID)), "=", 0)},
			clientv3.OpPut(nkey, ixData), clientv3.OpPut(c.defKey(d.ID), defData))
		if err != nil || !ok {
			return defResult{}, false, err // lost the race: read the winner's
		}
		return defResult{d: d, created: true}, true, nil
	})
}

// updateDefinition applies f to the definition read and writes it fenced on the revision read; f
// returns false when nothing changes.
func (c *catalogStore) updateDefinition(ctx context.Context, id string,
	f func(d *catalog.Definition) (changed bool, err error)) (catalog.Definition, error) {
	return retry(ctx, "update definition", func() (catalog.Definition, bool, error) {
		d, rev, err := c.definition(ctx, id)
		if err != nil {
			return catalog.Definition{}, false, err
		}
		changed, err := f(&d)
		if err != nil || !changed {
			return d, true, err
		}
		d.UpdatedAt = time.Now().UTC()
		data, err := catEncode(d)
		if err != nil {
			return catalog.Definition{}, false, err
		}
		ok, err := c.commit(ctx, "update definition",
			[]clientv3.Cmp{clientv3.Compare(clientv3.ModRevision(c.defKey(id)), "=", rev)},
			clientv3.OpPut(c.defKey(id), data))
		return d, ok, err
	})
}

// SaveSource implements catalog.Store.
func (c *catalogStore) SaveSource(ctx context.Context, id string, source []byte) (catalog.Definition, error) {
	var compiled *catalog.Compiled // compiled once, only if the source changed
	return c.updateDefinition(ctx, id, func(d *catalog.Definition) (bool, error) {
		if bytes.Equal(d.Source, source) {
			return false, nil
		}
		if compiled == nil {
			cp, err := c.compileSource(source)
			if err != nil {
				return false, err
			}
			compiled = &cp
		}
		d.Source = bytes.Clone(source)
		d.Digest = compiled.Digest
		d.Revision++
		return true, nil
	})
}

// Rename implements catalog.Store: one transaction fenced on the definition and both name index keys
// renames the definition, indexes the new name and drops the old index.
func (c *catalogStore) Rename(ctx context.Context, id, name string) (catalog.Definition, error) {
	return retry(ctx, "rename definition", func() (catalog.Definition, bool, error) {
		d, rev, err := c.definition(ctx, id)
		if err != nil || d.Name == name {
			return d, true, err
		}
		nd := d
		nd.Name, nd.UpdatedAt = name, time.Now().UTC()
		if err := nd.Validate(); err != nil {
			return catalog.Definition{}, false, err
		}
		cmps := []clientv3.Cmp{clientv3.Compare(clientv3.ModRevision(c.defKey(id)), "=", rev)}
		newKey, oldKey := c.nameKey(d.Company, name), c.nameKey(d.Company, d.Name)
		kv, found, err := c.read(ctx, newKey, "name index")
		if err != nil {
			return catalog.Definition{}, false, err
		}
		if found {
			ix, err := decodeNameIndex(kv, d.Company, name)
			if err != nil {
				return catalog.Definition{}, false, err
			}
			if ix.DefinitionID != id {
				h, herr := c.Definition(ctx, ix.DefinitionID)
				if herr == nil && h.Company == d.Company && h.Name == name {
					return catalog.Definition{}, false, errors.Wrapf(catalog.ErrExists,
						"etcdstore: catalog: name held by definition %s", errors.Safe(h.ID))
				}
				if herr != nil && !errors.Is(herr, catalog.ErrNotFound) {
					return catalog.Definition{}, false, herr
				}
			}
			cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(newKey), "=", kv.ModRevision))
		} else {
			cmps = append(cmps, clientv3.Compare(clientv3.CreateRevision(newKey), "=", 0))
		}
		ixData, err := catEncode(catNameIndex{Company: d.Company, Name: name, DefinitionID: id})
		if err != nil {
			return catalog.Definition{}, false, err
		}
		defData, err := catEncode(nd)
		if err != nil {
			return catalog.Definition{}, false, err
		}
		ops := []clientv3.Op{clientv3.OpPut(newKey, ixData), clientv3.OpPut(c.defKey(id), defData)}
		if okv, ofound, err := c.read(ctx, oldKey, "name index"); err != nil {
			return catalog.Definition{}, false, err
		} else if ofound {
			if ox, err := decodeNameIndex(okv, d.Company, d.Name); err == nil && ox.DefinitionID == id {
				cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(oldKey), "=", okv.ModRevision))
				ops = append(ops, clientv3.OpDelete(oldKey))
			}
		}
		ok, err := c.commit(ctx, "rename definition", cmps, ops...)
		return nd, ok, err
	})
}

// Assign implements catalog.Store: the assignment key is created If(CreateRevision == 0).
func (c *catalogStore) Assign(ctx context.Context, definitionID, minionID, company string) (catalog.Assignment, error) {
	a := catalog.Assignment{DefinitionID: definitionID, MinionID: minionID, Company: company,
		CreatedAt: time.Now().UTC()}
	if err := a.Validate(); err != nil {
		return catalog.Assignment{}, err
	}
	d, err := c.Definition(ctx, definitionID)
	if err != nil {
		return catalog.Assignment{}, err
	}
	if err := d.AssignableTo(company); err != nil {
		return catalog.Assignment{}, err
	}
	data, err := catEncode(a)
	if err != nil {
		return catalog.Assignment{}, err
	}
	key := c.asgKey(definitionID, minionID)
	return retry(ctx, "assign", func() (catalog.Assignment, bool, error) {
		ok, err := c.commit(ctx, "assign", []clientv3.Cmp{clientv3.Compare(clientv3.CreateRevision(key), "=", 0)},
			clientv3.OpPut(key, data))
		if err != nil || ok {
			return a, ok, err
		}
		cur, err := c.Assignment(ctx, definitionID, minionID)
		if errors.Is(err, catalog.ErrNotFound) {
			return catalog.Assignment{}, false, nil // unassigned meanwhile: try again
		}
		if err != nil {
			return catalog.Assignment{}, false, err
		}
		if cur.Company != company {
			return catalog.Assignment{}, false, errors.Wrap(catalog.ErrExists, "etcdstore: catalog: assigned for another company")
		}
		return cur, true, nil
	})
}

// Unassign implements catalog.Store.
func (c *catalogStore) Unassign(ctx context.Context, definitionID, minionID string) error {
	// A corrupt or crossed record is removed too: removing an assignment only takes a right away.
	if _, err := c.Assignment(ctx, definitionID, minionID); err != nil && !errors.Is(err, catalog.ErrCorrupt) {
		return err
	}
	if _, err := c.s.cli.Delete(ctx, c.asgKey(definitionID, minionID)); err != nil {
		return writeErr(err, "catalog unassign")
	}
	return nil
}
