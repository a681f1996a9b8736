package service

import (
	"time"

	"github.com/oduflow/oduflow-go/oduflow/catalog"
	"github.com/oduflow/oduflow-go/receipt"
)

// definitionView is a definition's metadata: what every role reads. No source.
type definitionView struct {
	ID        string    `json:"id"`
	Company   string    `json:"company"`
	Name      string    `json:"name"`
	Revision  int       `json:"revision"`
	Digest    string    `json:"digest"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// definitionSource is a definition as its company's administrators read it: with its source.
type definitionSource struct {
	definitionView
	Source string `json:"source"`
}

func viewOfDefinition(d catalog.Definition) definitionView {
	return definitionView{ID: d.ID, Company: d.Company, Name: d.Name, Revision: d.Revision, Digest: d.Digest,
		CreatedAt: d.CreatedAt, UpdatedAt: d.UpdatedAt}
}

// assignmentView is an assignment with its definition's name and revision.
type assignmentView struct {
	DefinitionID   string    `json:"definition_id"`
	DefinitionName string    `json:"definition_name"`
	Revision       int       `json:"revision"`
	MinionID       string    `json:"minion_id"`
	Company        string    `json:"company"`
	CreatedAt      time.Time `json:"created_at"`
}

// executionView is an execution's identities, revision, digest, mode, pointers and sanitized outcome
// (status, counts, error code): no source, no payload.
type executionView struct {
	RequestID    string               `json:"request_id"`
	Company      string               `json:"company"`
	DefinitionID string               `json:"definition_id"`
	Revision     int                  `json:"revision"`
	Digest       string               `json:"digest"`
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

func viewOfExecution(e catalog.Execution) executionView {
	v := executionView{RequestID: e.RequestID, Company: e.Company, DefinitionID: e.DefinitionID,
		Revision: e.Revision, Digest: e.Digest, MinionID: e.MinionID, Mode: e.Mode, CreatedAt: e.CreatedAt,
		PointedBy: []string{}, Status: e.Outcome.Status, Passed: e.Outcome.Passed, Total: e.Outcome.Total,
		ErrorCode: e.Outcome.ErrorCode, ConfirmedBy: e.Outcome.ConfirmedBy}
	for _, p := range e.Pointers {
		v.PointedBy = append(v.PointedBy, p.RequestID)
	}
	return v
}
