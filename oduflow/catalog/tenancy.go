package catalog

import (
	"github.com/cockroachdb/errors"

	"github.com/oduflow/oduflow-go/internal/errmark"
)

// Tenancy: a definition belongs to one company (Definition.Company, fixed at creation), and it may be
// assigned only to that company's servers. Assign refuses anything else with ErrInvalid, and every read
// of an assignment checks it again against the definition it names, so that a record written around
// Assign (a hand edit, a restored backup, another implementation) can never make one company's source
// run as another company's execution: such a crossed record is ErrCorrupt.

// errCrossedTenancy: a stored assignment whose company is not its definition's company.
var errCrossedTenancy = errmark.Mark(errors.New("catalog: assignment crosses companies"), ErrCorrupt)

// AssignableTo reports whether company may be assigned the definition d: ErrInvalid (naming neither
// company's records beyond the definition id) when d belongs to another company.
func (d Definition) AssignableTo(company string) (err error) {
	defer errmark.Boundary(&err)
	if d.Company != company {
		return invalidf("catalog: definition %s belongs to another company", errors.Safe(d.ID))
	}
	return nil
}

// CheckDefinition checks a stored assignment against the definition it names: the same definition id
// and the same company, else ErrCorrupt. Stores call it on every read; the dispatcher calls it again
// before it freezes an execution.
func (a Assignment) CheckDefinition(d Definition) (err error) {
	defer errmark.Boundary(&err)
	if a.DefinitionID != d.ID {
		return errors.Wrap(ErrCorrupt, "catalog: assignment read against another definition")
	}
	if a.Company != d.Company {
		return errors.Wrapf(errCrossedTenancy, "definition %s, server %s", errors.Safe(d.ID), errors.Safe(a.MinionID))
	}
	return nil
}

// assignedDefinitionErr maps the error of reading an assignment's definition: a definition that does
// not exist makes the assignment corrupt (Assign requires it, and definitions are never deleted).
func assignedDefinitionErr(err error) error {
	if errors.Is(err, ErrNotFound) {
		// Not wrapping err: the assignment is corrupt, it must not read as "not assigned".
		return errors.Wrap(ErrCorrupt, "catalog: assignment of a missing definition")
	}
	return err
}
