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
		return Compiled{}, errmark.Mark(errors.Wrap(err, "catalog: compile"), ErrInvalidSource)
	}
	if len(c.Canonical) == 0 || receipt.DigestBytes(c.Canonical) != c.Digest {
		return Compiled{}, errors.Wrap(ErrInvalidSource, "catalog: compiler digest does not match its canonical form")
	}
	return c, nil
}

// CreateDefinition implements Store.
func (s *FileStore) CreateDefinition(ctx context.Context, company, name string, source []byte) (Definition, error) {
	if err := ctxErr(ctx); err != nil {
		return Definition{}, err
	}
	if err := checkCompany(company); err != nil {
		return Definition{}, err
	}
	if !validText(name, MaxNameLen) {
		return Definition{}, invalidf("catalog: invalid definition name")
	}
	c, err := s.compileSource(source)
	if err != nil {
		return Definition{}, err
	}
	now := s.stamp()
	d := Definition{ID: receipt.NewRequestID(), Company: company, Name: name, Source: cloneBytes(source),
		Revision: 1, Digest: c.Digest, CreatedAt: now, UpdatedAt: now}
	if err := s.createJSON(defName(d.ID), &d); err != nil {
		return Definition{}, err
	}
	return d.clone(), nil
}

// Definition implements Reader.
func (s *FileStore) Definition(ctx context.Context, id string) (Definition, error) {
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

// Definitions implements Reader.
func (s *FileStore) Definitions(ctx context.Context) ([]Definition, error) {
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
func (s *FileStore) SaveSource(ctx context.Context, id string, source []byte) (Definition, error) {
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

// Rename implements Store.
func (s *FileStore) Rename(ctx context.Context, id, name string) (Definition, error) {
	if !validText(name, MaxNameLen) {
		return Definition{}, invalidf("catalog: invalid definition name")
	}
	return s.updateDefinition(ctx, id, func(d *Definition) (bool, error) {
		if d.Name == name {
			return false, nil
		}
		d.Name = name
		return true, nil
	})
}

// Assign implements Store.
func (s *FileStore) Assign(ctx context.Context, definitionID, minionID, company string) (Assignment, error) {
	if err := checkMinion(minionID); err != nil {
		return Assignment{}, err
	}
	if err := checkCompany(company); err != nil {
		return Assignment{}, err
	}
	if _, err := s.Definition(ctx, definitionID); err != nil {
		return Assignment{}, err
	}
	a := Assignment{DefinitionID: definitionID, MinionID: minionID, Company: company, CreatedAt: s.stamp()}
	err := s.createJSON(asgName(definitionID, minionID), &a)
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
func (s *FileStore) Unassign(ctx context.Context, definitionID, minionID string) error {
	if _, err := s.Assignment(ctx, definitionID, minionID); err != nil {
		return err
	}
	if err := s.st.Remove(asgName(definitionID, minionID)); err != nil && !errors.Is(err, safefile.ErrNotExist) {
		return errors.Wrap(err, "catalog: remove assignment")
	}
	return nil
}

// Assignment implements Reader.
func (s *FileStore) Assignment(ctx context.Context, definitionID, minionID string) (Assignment, error) {
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
	return a, nil
}

// Assignments implements Reader.
func (s *FileStore) Assignments(ctx context.Context, minionID string) ([]Assignment, error) {
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
