package service

import (
	"net/http"
	"time"

	"github.com/oduflow/oduflow-go/oduflow/catalog"
	"github.com/oduflow/oduflow-go/receipt"
)

// definitionView is a definition's metadata: what every role reads. No source; the digest for
// administrators only (see seesDigest).
type definitionView struct {
	ID        string    `json:"id"`
	Company   string    `json:"company"`
	Name      string    `json:"name"`
	Revision  int       `json:"revision"`
	Digest    string    `json:"digest,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// definitionSource is a definition as its company's administrators read it: with its source.
type definitionSource struct {
	definitionView
	Source string `json:"source"`
}

// viewOfDefinition is d's metadata, its digest only when digest is true (seesDigest).
func viewOfDefinition(d catalog.Definition, digest bool) definitionView {
	v := definitionView{ID: d.ID, Company: d.Company, Name: d.Name, Revision: d.Revision,
		CreatedAt: d.CreatedAt, UpdatedAt: d.UpdatedAt}
	if digest {
		v.Digest = d.Digest
	}
	return v
}

// seesDigest reports whether the caller reads source digests: administrators, who read the source
// itself. An observer never does: a digest of a source confirms a guess of it offline (a secret in a
// state file found by compiling candidates), so it is withheld, not keyed, from every role that may not
// read the source.
func (s *Service) seesDigest(r *http.Request) bool { return grantOf(r).admin() }

// assignmentView is an assignment with its definition's name and revision.
type assignmentView struct {
	DefinitionID   string    `json:"definition_id"`
	DefinitionName string    `json:"definition_name"`
	Revision       int       `json:"revision"`
	MinionID       string    `json:"minion_id"`
	Company        string    `json:"company"`
	CreatedAt      time.Time `json:"created_at"`
}

// executionView is an execution's identities, revision, digest (administrators only), mode, pointers
// and sanitized outcome (status, counts, error code): no source, no payload.
type executionView struct {
	RequestID    string               `json:"request_id"`
	Company      string               `json:"company"`
	DefinitionID string               `json:"definition_id"`
	Revision     int                  `json:"revision"`
	Digest       string               `json:"digest,omitempty"`
	MinionID     string               `json:"minion_id"`
	Mode         catalog.Mode         `json:"mode"`
	CreatedAt    time.Time            `json:"created_at"`
	PointedBy    []string             `json:"pointed_by"`
	Status       receipt.Status       `json:"status"`
	Passed       int                  `json:"passed"`
	Total        int                  `json:"total"`
	ErrorCode    string               `json:"error_code"`
	ConfirmedBy  catalog.Confirmation `json:"confirmed_by,omitempty"`
}

func viewOfExecution(e catalog.Execution, digest bool) executionView {
	v := executionView{RequestID: e.RequestID, Company: e.Company, DefinitionID: e.DefinitionID,
		Revision: e.Revision, MinionID: e.MinionID, Mode: e.Mode, CreatedAt: e.CreatedAt,
		PointedBy: []string{}, Status: e.Outcome.Status, Passed: e.Outcome.Passed, Total: e.Outcome.Total,
		ErrorCode: e.Outcome.ErrorCode, ConfirmedBy: e.Outcome.ConfirmedBy}
	if digest {
		v.Digest = e.Digest
	}
	for _, p := range e.Pointers {
		v.PointedBy = append(v.PointedBy, p.RequestID)
	}
	return v
}
