package catalog

import (
	"bytes"
	"context"
	"sort"
	"strings"

	"github.com/oduflow/oduflow-go/internal/errmark"
	"github.com/oduflow/oduflow-go/internal/safefile"

	"github.com/cockroachdb/errors"

	"github.com/oduflow/oduflow-go/receipt"
)

func defName(id string) string { return "def." + id + ".json" }

func asgName(defID, minion string) string { return "asg." + defID + "." + minion + ".json" }

func (s *FileStore) compileSource(source []byte) (Compiled, error) {
	c, err := s.compile(source)
	if err != nil {
		// The compiler's error carries a code and a position, never the source.
		return Compiled{}, errmark.Mark(errors.Wrap(err, "catalog: compile"), errInvalidSource, ErrInvalid)
	}
	return c, c.Validate()
}

// CreateDefinition implements Store. A name the company already uses gives ErrExists:
// one definition per company and name (see GetOrCreateDefinition).
func (s *FileStore) CreateDefinition(ctx context.Context, company, name string, source []byte) (_ Definition, err error) {
	defer errmark.Boundary(&err)
	d, _, err := s.getOrCreate(ctx, company, name, source, true)
	return d, err
}

// Definition implements Store.
func (s *FileStore) Definition(ctx context.Context, id string) (_ Definition, err error) {
	defer errmark.Boundary(&err)
	if err := ctxErr(ctx); err != nil {
		return Definition{}, err
	}
	if err := checkID("definition id", id); err != nil {
		return Definition{}, err
	}
	var d Definition
	if err := s.readJSON(defName(id), &d); err != nil {
		return Definition{}, err
	}
	if d.ID != id {
		return Definition{}, errors.Wrap(ErrCorrupt, "catalog: definition id does not match its name")
	}
	return d, nil
}

// Definitions implements Store.
func (s *FileStore) Definitions(ctx context.Context) (_ []Definition, err error) {
	defer errmark.Boundary(&err)
	if err := ctxErr(ctx); err != nil {
		return nil, err
	}
	names, err := s.st.List("def.")
	if err != nil {
		return nil, errors.Wrap(err, "catalog: list definitions")
	}
	out := make([]Definition, 0, len(names))
	for _, n := range names {
		id, ok := strings.CutSuffix(strings.TrimPrefix(n, "def."), ".json")
		if !ok || receipt.ValidateRequestID(id) != nil {
			continue // temp files, lock files
		}
		d, err := s.Definition(ctx, id)
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].CreatedAt.Equal(out[j].CreatedAt) {
			return out[i].CreatedAt.Before(out[j].CreatedAt)
		}
		return out[i].ID < out[j].ID
	})
	return out, nil
}

func (s *FileStore) updateDefinition(ctx context.Context, id string, f func(*Definition) (bool, error)) (d Definition, err error) {
	if err := ctxErr(ctx); err != nil {
		return Definition{}, err
	}
	if err := checkID("definition id", id); err != nil {
		return Definition{}, err
	}
	l, err := s.lock(ctx, defName(id))
	if err != nil {
		return Definition{}, err
	}
	defer release(l, &err)
	if d, err = s.Definition(ctx, id); err != nil {
		return Definition{}, err
	}
	changed, err := f(&d)
	if err != nil || !changed {
		return d, err
	}
	d.UpdatedAt = s.stamp()
	if err := s.writeJSON(defName(id), &d); err != nil {
		return Definition{}, err
	}
	return d.clone(), nil
}

// SaveSource implements Store.
func (s *FileStore) SaveSource(ctx context.Context, id string, source []byte) (_ Definition, err error) {
	defer errmark.Boundary(&err)
	return s.updateDefinition(ctx, id, func(d *Definition) (bool, error) {
		if bytes.Equal(d.Source, source) {
			return false, nil
		}
		c, err := s.compileSource(source)
		if err != nil {
			return false, err
		}
		d.Source = cloneBytes(source)
		d.Digest = c.Digest
		d.Revision++
		return true, nil
	})
}

// Rename implements Store. The new name must be free within the company (else ErrExists and
// the name index moves with the definition, so one definition per name still holds.
func (s *FileStore) Rename(ctx context.Context, id, name string) (d Definition, err error) {
	defer errmark.Boundary(&err)
	if !validText(name, maxNameLen) {
		return Definition{}, invalidf("catalog: invalid definition name")
	}
	if err := checkID("definition id", id); err != nil {
		return Definition{}, err
	}
	l, err := s.lock(ctx, defName(id))
	if err != nil {
		return Definition{}, err
	}
	defer release(l, &err)
	if d, err = s.Definition(ctx, id); err != nil {
		return Definition{}, err
	}
	if d.Name == name {
		return d, nil
	}
	// Both name locks, in a fixed order (two renames in opposite directions must not deadlock).
	oldIdx, newIdx := namName(d.Company, d.Name), namName(d.Company, name)
	first, second := oldIdx, newIdx
	if second < first {
		first, second = second, first
	}
	l1, err := s.lock(ctx, first)
	if err != nil {
		return Definition{}, err
	}
	defer release(l1, &err)
	l2, err := s.lock(ctx, second)
	if err != nil {
		return Definition{}, err
	}
	defer release(l2, &err)
	ix, found, err := s.readNameIndex(d.Company, name)
	if err != nil {
		return Definition{}, err
	}
	if found && ix.DefinitionID != id {
		if h, ok, _, herr := s.holder(ctx, ix); herr != nil {
			return Definition{}, herr
		} else if ok {
			return Definition{}, errors.Mark(errors.Wrapf(errNameTaken, "catalog: held by definition %s",
				errors.Safe(h.ID)), ErrExists)
		}
	}
	if !found {
		// A definition written before the name index may hold the name.
		if h, err := s.preferredHolder(ctx, d.Company, name); err != nil {
			return Definition{}, err
		} else if h != nil && h.ID != id {
			return Definition{}, errors.Mark(errors.Wrapf(errNameTaken, "catalog: held by definition %s",
				errors.Safe(h.ID)), ErrExists)
		}
	}
	// Index the new name first: a crash before the definition is written leaves a stale index (replaced
	// on use), never a name held twice.
	if err := s.writeJSON(newIdx, &nameIndex{Company: d.Company, Name: name, DefinitionID: id}); err != nil {
		return Definition{}, err
	}
	oldName := d.Name
	d.Name = name
	d.UpdatedAt = s.stamp()
	if err := s.writeJSON(defName(id), &d); err != nil {
		return Definition{}, err
	}
	if ox, ofound, oerr := s.readNameIndex(d.Company, oldName); oerr == nil && ofound && ox.DefinitionID == id {
		if rerr := s.st.Remove(oldIdx); rerr != nil && !errors.Is(rerr, safefile.ErrNotExist) {
			return Definition{}, errors.Wrap(rerr, "catalog: remove old name index")
		}
	}
	return d.clone(), nil
}

// Assign implements Store.
func (s *FileStore) Assign(ctx context.Context, definitionID, minionID, company string) (_ Assignment, err error) {
	defer errmark.Boundary(&err)
	if err := checkMinion(minionID); err != nil {
		return Assignment{}, err
	}
	if err := checkCompany(company); err != nil {
		return Assignment{}, err
	}
	d, err := s.Definition(ctx, definitionID)
	if err != nil {
		return Assignment{}, err
	}
	if err := d.AssignableTo(company); err != nil {
		return Assignment{}, err
	}
	a := Assignment{DefinitionID: definitionID, MinionID: minionID, Company: company, CreatedAt: s.stamp()}
	err = s.createJSON(asgName(definitionID, minionID), &a)
	if errors.Is(err, ErrExists) {
		cur, rerr := s.Assignment(ctx, definitionID, minionID)
		if rerr != nil {
			return Assignment{}, rerr
		}
		if cur.Company != company {
			return Assignment{}, errors.Wrap(err, "catalog: assigned for another company")
		}
		return cur, nil
	}
	if err != nil {
		return Assignment{}, err
	}
	return a, nil
}

// Unassign implements Store.
func (s *FileStore) Unassign(ctx context.Context, definitionID, minionID string) (err error) {
	defer errmark.Boundary(&err)
	// A corrupt or crossed record is removed too: removing an assignment only takes a right away.
	if _, err := s.Assignment(ctx, definitionID, minionID); err != nil && !errors.Is(err, ErrCorrupt) {
		return err
	}
	if err := s.st.Remove(asgName(definitionID, minionID)); err != nil && !errors.Is(err, safefile.ErrNotExist) {
		return errors.Wrap(err, "catalog: remove assignment")
	}
	return nil
}

// Assignment implements Store.
func (s *FileStore) Assignment(ctx context.Context, definitionID, minionID string) (_ Assignment, err error) {
	defer errmark.Boundary(&err)
	if err := ctxErr(ctx); err != nil {
		return Assignment{}, err
	}
	if err := checkID("definition id", definitionID); err != nil {
		return Assignment{}, err
	}
	if err := checkMinion(minionID); err != nil {
		return Assignment{}, err
	}
	var a Assignment
	if err := s.readJSON(asgName(definitionID, minionID), &a); err != nil {
		return Assignment{}, err
	}
	if a.DefinitionID != definitionID || a.MinionID != minionID {
		return Assignment{}, errors.Wrap(ErrCorrupt, "catalog: assignment does not match its name")
	}
	d, err := s.Definition(ctx, definitionID)
	if err != nil {
		return Assignment{}, assignedDefinitionErr(err)
	}
	if err := a.CheckDefinition(d); err != nil {
		return Assignment{}, err
	}
	return a, nil
}

// Assignments implements Store.
func (s *FileStore) Assignments(ctx context.Context, minionID string) (_ []Assignment, err error) {
	defer errmark.Boundary(&err)
	if err := ctxErr(ctx); err != nil {
		return nil, err
	}
	if minionID != "" {
		if err := checkMinion(minionID); err != nil {
			return nil, err
		}
	}
	names, err := s.st.List("asg.")
	if err != nil {
		return nil, errors.Wrap(err, "catalog: list assignments")
	}
	var out []Assignment
	for _, n := range names {
		rest, ok := strings.CutSuffix(strings.TrimPrefix(n, "asg."), ".json")
		if !ok {
			continue
		}
		defID, minion, ok := strings.Cut(rest, ".")
		if !ok || receipt.ValidateRequestID(defID) != nil || receipt.ValidateMinionID(minion) != nil {
			continue
		}
		if minionID != "" && minion != minionID {
			continue
		}
		a, err := s.Assignment(ctx, defID, minion)
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].MinionID != out[j].MinionID {
			return out[i].MinionID < out[j].MinionID
		}
		if !out[i].CreatedAt.Equal(out[j].CreatedAt) {
			return out[i].CreatedAt.Before(out[j].CreatedAt)
		}
		return out[i].DefinitionID < out[j].DefinitionID
	})
	return out, nil
}
