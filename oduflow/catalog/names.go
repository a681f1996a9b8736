package catalog

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"sort"
	"strings"
	"time"

	"github.com/cockroachdb/errors"

	"github.com/oduflow/oduflow-go/internal/errmark"
	"github.com/oduflow/oduflow-go/receipt"
)

// One definition per company and name. The catalog enforces it with a name index record per (company,
// name), nam.<sha256(company)>.<sha256(name)>.json, naming the definition that holds the name. The index
// is created exclusively (create-if-absent) under the flock of its own name, and written BEFORE the
// definition it names, so a crash between the two leaves an index whose definition is missing: the next
// GetOrCreateDefinition creates that definition under the indexed id, never a second one. An index whose
// definition carries another name (a Rename interrupted after it indexed the new name, or before it
// dropped the old one) is stale and is replaced.

// nameIndex is the record that reserves a (company, name) for one definition.
type nameIndex struct {
	Company      string `json:"company"`
	Name         string `json:"name"`
	DefinitionID string `json:"definition_id"`
}

func hashHex(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

// namName is the index record name: hashes keep arbitrary names within the store's plain-name rules.
func namName(company, name string) string {
	return "nam." + hashHex(company) + "." + hashHex(name) + ".json"
}

// duplicateName is a (company, name) held by more than one definition: a catalog written before the
// catalog enforced one definition per name. IDs are ordered by creation; Indexed is the one the name
// resolves to ("" until a GetOrCreateDefinition of that name chose one).
type duplicateName struct {
	Company string
	Name    string
	IDs     []string
	Indexed string
}

// errNameTaken: CreateDefinition or Rename found the company and name held by another definition (the
// error matches ErrExists too).
var errNameTaken = errmark.Mark(errors.New("catalog: a definition with that company and name exists"), ErrExists)

func (s *FileStore) readNameIndex(company, name string) (nameIndex, bool, error) {
	var ix nameIndex
	err := s.readJSON(namName(company, name), &ix)
	if errors.Is(err, ErrNotFound) {
		return nameIndex{}, false, nil
	}
	if err != nil {
		return nameIndex{}, false, err
	}
	if ix.Company != company || ix.Name != name || receipt.ValidateRequestID(ix.DefinitionID) != nil {
		return nameIndex{}, false, errors.Wrap(ErrCorrupt, "catalog: name index does not match its name")
	}
	return ix, true, nil
}

// holder returns the definition the index names when it still holds (company, name); ok false when the
// index is stale (the definition carries another name); missing true when the definition does not exist.
func (s *FileStore) holder(ctx context.Context, ix nameIndex) (d Definition, ok, missing bool, err error) {
	d, err = s.Definition(ctx, ix.DefinitionID)
	if errors.Is(err, ErrNotFound) {
		return Definition{}, false, true, nil
	}
	if err != nil {
		return Definition{}, false, false, err
	}
	return d, d.Company == ix.Company && d.Name == ix.Name, false, nil
}

// GetOrCreateDefinition returns the definition named name of company, creating it at revision 1 with
// source when there is none (created true). It is atomic across goroutines and processes sharing the
// directory: any number of concurrent calls for one (company, name) create exactly one definition. The
// source of an existing definition is left as it is (SaveSource changes it). In a catalog that already
// holds several definitions of that name (written before the name index existed), the name resolves to
// the one that ran most recently, else the oldest, and keeps resolving to it; see duplicates.
func (s *FileStore) GetOrCreateDefinition(ctx context.Context, company, name string, source []byte) (_ Definition, _ bool, err error) {
	defer errmark.Boundary(&err)
	return s.getOrCreate(ctx, company, name, source, false)
}

// getOrCreate is GetOrCreateDefinition; with mustCreate an existing holder of the name is ErrExists.
func (s *FileStore) getOrCreate(ctx context.Context, company, name string, source []byte, mustCreate bool) (d Definition, created bool, err error) {
	if err := ctxErr(ctx); err != nil {
		return Definition{}, false, err
	}
	if err := checkCompany(company); err != nil {
		return Definition{}, false, err
	}
	if !validText(name, maxNameLen) {
		return Definition{}, false, invalidf("catalog: invalid definition name")
	}
	c, err := s.compileSource(source)
	if err != nil {
		return Definition{}, false, err
	}
	idx := namName(company, name)
	l, err := s.lock(ctx, idx)
	if err != nil {
		return Definition{}, false, err
	}
	defer release(l, &err)
	taken := func(d Definition) (Definition, bool, error) {
		if mustCreate {
			return Definition{}, false, errors.Mark(errors.Wrapf(errNameTaken, "catalog: held by definition %s",
				errors.Safe(d.ID)), ErrExists)
		}
		return d, false, nil
	}
	ix, found, err := s.readNameIndex(company, name)
	if err != nil {
		return Definition{}, false, err
	}
	id := ""
	if found {
		d, ok, missing, err := s.holder(ctx, ix)
		switch {
		case err != nil:
			return Definition{}, false, err
		case ok:
			return taken(d)
		case missing:
			id = ix.DefinitionID // indexed, then interrupted before the definition was written
		}
	}
	if id == "" {
		// No index, or a stale one: a definition written before the index existed may hold the name.
		legacy, err := s.preferredHolder(ctx, company, name)
		if err != nil {
			return Definition{}, false, err
		}
		if legacy != nil {
			if err := s.putIndex(idx, nameIndex{Company: company, Name: name, DefinitionID: legacy.ID}, found); err != nil {
				return Definition{}, false, err
			}
			return taken(*legacy)
		}
		id = receipt.NewRequestID()
		if err := s.putIndex(idx, nameIndex{Company: company, Name: name, DefinitionID: id}, found); err != nil {
			return Definition{}, false, err
		}
	}
	now := s.stamp()
	d = Definition{ID: id, Company: company, Name: name, Source: cloneBytes(source),
		Revision: 1, Digest: c.Digest, CreatedAt: now, UpdatedAt: now}
	if err := s.createJSON(defName(d.ID), &d); err != nil {
		return Definition{}, false, err
	}
	return d.clone(), true, nil
}

// putIndex writes the name index: exclusively when there was none (replace false), atomically over a
// stale one otherwise. The caller holds the index's lock.
func (s *FileStore) putIndex(idx string, ix nameIndex, replace bool) error {
	if replace {
		return s.writeJSON(idx, &ix)
	}
	return s.createJSON(idx, &ix)
}

// preferredHolder returns the definition of (company, name) among those written without an index: the
// one with the most recent execution, else the oldest; nil when none holds the name.
func (s *FileStore) preferredHolder(ctx context.Context, company, name string) (*Definition, error) {
	defs, err := s.Definitions(ctx)
	if err != nil {
		return nil, err
	}
	var same []Definition
	for _, d := range defs {
		if d.Company == company && d.Name == name {
			same = append(same, d)
		}
	}
	switch len(same) {
	case 0:
		return nil, nil
	case 1:
		return &same[0], nil
	}
	ran, err := s.lastRun(ctx)
	if err != nil {
		return nil, err
	}
	best := same[0] // oldest: Definitions is ordered by creation
	for _, d := range same[1:] {
		if t, ok := ran[d.ID]; ok {
			if bt, bok := ran[best.ID]; !bok || t.After(bt) {
				best = d
			}
		}
	}
	return &best, nil
}

// lastRun maps definition ids to the creation time of their latest execution on any server.
func (s *FileStore) lastRun(ctx context.Context) (map[string]time.Time, error) {
	names, err := s.st.List("exe.")
	if err != nil {
		return nil, errors.Wrap(err, "catalog: list executions")
	}
	out := make(map[string]time.Time)
	for _, n := range names {
		rest, ok := strings.CutSuffix(strings.TrimPrefix(n, "exe."), ".json")
		if !ok {
			continue
		}
		minion, req, ok := strings.Cut(rest, ".")
		if !ok || receipt.ValidateMinionID(minion) != nil || receipt.ValidateRequestID(req) != nil {
			continue
		}
		if err := ctxErr(ctx); err != nil {
			return nil, err
		}
		e, err := s.readExecution(minion, req)
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if t, ok := out[e.DefinitionID]; !ok || e.CreatedAt.After(t) {
			out[e.DefinitionID] = e.CreatedAt
		}
	}
	return out, nil
}

// Duplicates returns the ids of the definitions holding a company's name (creation order) when more
// than one does, and the id the name index resolves the name to ("" until a GetOrCreateDefinition of
// that name chose one); ids is nil when the name has at most one definition. A catalog enforcing one
// definition per name has no duplicates; one written before may, and stays fully usable: the caller
// decides what to do with the others (Rename them apart).
func (s *FileStore) Duplicates(ctx context.Context, company, name string) (ids []string, indexed string, err error) {
	defer errmark.Boundary(&err)
	all, err := s.duplicates(ctx)
	if err != nil {
		return nil, "", err
	}
	for _, d := range all {
		if d.Company == company && d.Name == name {
			return d.IDs, d.Indexed, nil
		}
	}
	return nil, "", nil
}

// duplicates lists every (company, name) held by more than one definition, ordered by company then
// name, with the id the name index resolves it to.
func (s *FileStore) duplicates(ctx context.Context) ([]duplicateName, error) {
	defs, err := s.Definitions(ctx)
	if err != nil {
		return nil, err
	}
	type key struct{ company, name string }
	by := make(map[key][]string)
	var order []key
	for _, d := range defs {
		k := key{d.Company, d.Name}
		if _, ok := by[k]; !ok {
			order = append(order, k)
		}
		by[k] = append(by[k], d.ID)
	}
	var out []duplicateName
	for _, k := range order {
		if len(by[k]) < 2 {
			continue
		}
		dn := duplicateName{Company: k.company, Name: k.name, IDs: by[k]}
		if ix, found, err := s.readNameIndex(k.company, k.name); err == nil && found {
			dn.Indexed = ix.DefinitionID
		}
		out = append(out, dn)
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Company != out[j].Company {
			return out[i].Company < out[j].Company
		}
		return out[i].Name < out[j].Name
	})
	return out, nil
}
