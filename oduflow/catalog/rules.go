package catalog

import (
	"bytes"

	"github.com/cockroachdb/errors"

	"github.com/oduflow/oduflow-go/internal/errmark"
	"github.com/oduflow/oduflow-go/receipt"
)

// The rules every Store applies to what it is given and to what it reads back, whatever its backend:
// FileStore and the etcd catalog of package oduflow/etcdstore call the same methods, so that a record
// one accepts the other accepts too. Each refusal matches ErrInvalid.

// Validate checks what the compiler returned: a canonical form and its digest.
func (c Compiled) Validate() (err error) {
	defer errmark.Boundary(&err)
	if len(c.Canonical) == 0 || receipt.Digest(c.Canonical) != c.Digest {
		return errors.Wrap(errInvalidSource, "catalog: compiler digest does not match its canonical form")
	}
	return nil
}

// Validate checks a definition record: company and name (the inputs of CreateDefinition,
// GetOrCreateDefinition and Rename) first, then the identity, revision, source and digest a stored record
// must carry.
func (d Definition) Validate() (err error) {
	defer errmark.Boundary(&err)
	if err := checkCompany(d.Company); err != nil {
		return err
	}
	if !validText(d.Name, maxNameLen) {
		return invalidf("catalog: invalid definition name")
	}
	if err := checkID("definition id", d.ID); err != nil {
		return err
	}
	if d.Revision < 1 || len(d.Source) == 0 || !validDigest(d.Digest) {
		return invalidf("catalog: incomplete definition")
	}
	return nil
}

// Validate checks an assignment: definition id, minion id and company.
func (a Assignment) Validate() (err error) {
	defer errmark.Boundary(&err)
	if err := checkID("definition id", a.DefinitionID); err != nil {
		return err
	}
	if err := checkMinion(a.MinionID); err != nil {
		return err
	}
	return checkCompany(a.Company)
}

// Validate checks a pointer: its request id and its reason (reuse_running or reuse_succeeded).
func (p Pointer) Validate() (err error) {
	defer errmark.Boundary(&err)
	if p.Reason != reasonReuseRunning && p.Reason != reasonReuseSucceeded {
		return invalidf("catalog: invalid pointer reason")
	}
	return checkID("request id", p.RequestID)
}

// Validate checks an execution snapshot as CreateExecution takes it: identities, company, mode, a
// complete snapshot within the size bounds, and the digest of its canonical payload.
func (e Execution) Validate() (err error) {
	defer errmark.Boundary(&err)
	if err := checkID("request id", e.RequestID); err != nil {
		return err
	}
	if err := checkID("definition id", e.DefinitionID); err != nil {
		return err
	}
	if err := checkMinion(e.MinionID); err != nil {
		return err
	}
	if err := checkCompany(e.Company); err != nil {
		return err
	}
	if !e.Mode.Valid() {
		return invalidf("catalog: invalid mode %q", errors.Safe(string(e.Mode)))
	}
	if e.Revision < 1 || len(e.Source) == 0 || len(e.Canonical) == 0 {
		return invalidf("catalog: incomplete snapshot")
	}
	if len(e.Source) > maxSnapshotBytes || len(e.Canonical) > maxSnapshotBytes {
		return invalidf("catalog: snapshot source or payload larger than %d bytes", errors.Safe(maxSnapshotBytes))
	}
	if receipt.Digest(e.Canonical) != e.Digest {
		return invalidf("catalog: digest does not match the canonical payload")
	}
	return nil
}

// ValidateStored checks an execution record read back from a backend: a valid snapshot (Validate), at
// most the pointer bound of pointers, each valid, and a valid outcome.
func (e Execution) ValidateStored() (err error) {
	defer errmark.Boundary(&err)
	if err := e.Validate(); err != nil {
		return err
	}
	if len(e.Pointers) > maxPointers {
		return invalidf("catalog: too many pointers on one execution")
	}
	for _, p := range e.Pointers {
		if err := p.Validate(); err != nil {
			return err
		}
	}
	return e.Outcome.Validate()
}

// SameSnapshot reports whether two executions freeze the same snapshot (request, company, definition,
// revision, source, payload, digest, minion, mode); pointers, outcome and times are not compared.
func (e Execution) SameSnapshot(o Execution) bool {
	return e.RequestID == o.RequestID && e.Company == o.Company && e.DefinitionID == o.DefinitionID &&
		e.Revision == o.Revision && e.Digest == o.Digest && e.MinionID == o.MinionID && e.Mode == o.Mode &&
		bytes.Equal(e.Source, o.Source) && bytes.Equal(e.Canonical, o.Canonical)
}

// Validate checks an outcome: a known status and confirmation, consistent counts, confirmation only of a
// terminal status, and a short printable error code.
func (o Outcome) Validate() (err error) {
	defer errmark.Boundary(&err)
	switch o.Status {
	case receipt.StatusNotStarted, receipt.StatusRunning, receipt.StatusSucceeded, receipt.StatusFailed,
		receipt.StatusUnknown:
	default:
		return invalidf("catalog: invalid status %q", errors.Safe(string(o.Status)))
	}
	if !o.ConfirmedBy.Valid() {
		return invalidf("catalog: invalid confirmation %q", errors.Safe(string(o.ConfirmedBy)))
	}
	if o.Passed < 0 || o.Total < 0 || o.Passed > o.Total {
		return invalidf("catalog: invalid counts")
	}
	if !o.Status.Terminal() && o.ConfirmedBy != confirmedNone {
		return invalidf("catalog: a non-terminal outcome cannot be confirmed")
	}
	if len(o.ErrorCode) > 64 || (o.ErrorCode != "" && !validText(o.ErrorCode, 64)) {
		return invalidf("catalog: invalid error code")
	}
	return nil
}

// Final reports whether an outcome can no longer change: terminal and confirmed by the minion or the
// master. An asserted outcome may still be replaced by the minion's receipt. RecordOutcome refuses to
// replace a final outcome with a different one (ErrExists).
func (o Outcome) Final() bool {
	return o.Status.Terminal() &&
		(o.ConfirmedBy == ConfirmedByMinionReceipt || o.ConfirmedBy == ConfirmedByMasterRecord)
}

// Same reports whether two outcomes say the same (UpdatedAt aside): RecordOutcome of the same outcome
// changes nothing.
func (o Outcome) Same(p Outcome) bool {
	return o.Status == p.Status && o.Passed == p.Passed && o.Total == p.Total && o.ErrorCode == p.ErrorCode &&
		o.ConfirmedBy == p.ConfirmedBy && o.Dispatched == p.Dispatched
}

func validDigest(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !('0' <= s[i] && s[i] <= '9' || 'a' <= s[i] && s[i] <= 'f') {
			return false
		}
	}
	return true
}
