package main

import (
	"context"
	"time"

	"github.com/cockroachdb/errors"

	"github.com/oduflow/oduflow-go/oduflow/catalog"
	"github.com/oduflow/oduflow-go/receipt"
)

// DefinitionView is what an observer may know about a definition: no source.
type DefinitionView struct {
	ID        string    `json:"id"`
	Company   string    `json:"company"`
	Name      string    `json:"name"`
	Revision  int       `json:"revision"`
	Digest    string    `json:"digest"`
	UpdatedAt time.Time `json:"updated_at"`
}

// AssignmentView is an assignment as an observer sees it. DefinitionName is empty when the definition
// belongs to a company the observer may not read.
type AssignmentView struct {
	DefinitionID   string    `json:"definition_id"`
	DefinitionName string    `json:"definition_name,omitempty"`
	MinionID       string    `json:"minion_id"`
	Company        string    `json:"company"`
	CreatedAt      time.Time `json:"created_at"`
}

// ExecutionView is an execution as an observer sees it: identities, revision, digest, mode, pointers and
// the sanitized outcome. No source and no payload.
type ExecutionView struct {
	RequestID    string               `json:"request_id"`
	Company      string               `json:"company"`
	DefinitionID string               `json:"definition_id"`
	Revision     int                  `json:"revision"`
	Digest       string               `json:"digest"`
	MinionID     string               `json:"minion_id"`
	Mode         catalog.Mode         `json:"mode"`
	CreatedAt    time.Time            `json:"created_at"`
	PointedBy    []string             `json:"pointed_by,omitempty"`
	Status       receipt.Status       `json:"status"`
	Passed       int                  `json:"passed"`
	Total        int                  `json:"total"`
	ErrorCode    string               `json:"error_code,omitempty"`
	ConfirmedBy  catalog.Confirmation `json:"confirmed_by,omitempty"`
}

// ViewOf returns the sanitized view of an execution.
func ViewOf(e catalog.Execution) ExecutionView {
	v := ExecutionView{RequestID: e.RequestID, Company: e.Company, DefinitionID: e.DefinitionID,
		Revision: e.Revision, Digest: e.Digest, MinionID: e.MinionID, Mode: e.Mode, CreatedAt: e.CreatedAt,
		Status: e.Outcome.Status, Passed: e.Outcome.Passed, Total: e.Outcome.Total,
		ErrorCode: e.Outcome.ErrorCode, ConfirmedBy: e.Outcome.ConfirmedBy}
	for _, p := range e.Pointers {
		v.PointedBy = append(v.PointedBy, p.RequestID)
	}
	return v
}

// Observer reads a catalog on behalf of a user limited to a set of companies. It never returns source or
// payload; records of other companies read as catalog.ErrNotFound or are left out of lists.
type Observer struct {
	r       catalog.Store
	allowed map[string]struct{}
}

// NewObserver returns an Observer of r limited to companies (none: it sees nothing).
func NewObserver(r catalog.Store, companies ...string) *Observer {
	o := &Observer{r: r, allowed: make(map[string]struct{}, len(companies))}
	for _, c := range companies {
		o.allowed[c] = struct{}{}
	}
	return o
}

func (o *Observer) may(company string) bool {
	_, ok := o.allowed[company]
	return ok
}

func hidden() error { return errors.Wrap(catalog.ErrNotFound, "catalog: not visible") }

// Definitions lists the definitions of the allowed companies.
func (o *Observer) Definitions(ctx context.Context) ([]DefinitionView, error) {
	all, err := o.r.Definitions(ctx)
	if err != nil {
		return nil, err
	}
	var out []DefinitionView
	for _, d := range all {
		if o.may(d.Company) {
			out = append(out, DefinitionView{ID: d.ID, Company: d.Company, Name: d.Name, Revision: d.Revision,
				Digest: d.Digest, UpdatedAt: d.UpdatedAt})
		}
	}
	return out, nil
}

// Assignments lists the assignments of one server ("" = every server) within the allowed companies.
func (o *Observer) Assignments(ctx context.Context, minionID string) ([]AssignmentView, error) {
	all, err := o.r.Assignments(ctx, minionID)
	if err != nil {
		return nil, err
	}
	var out []AssignmentView
	for _, a := range all {
		if !o.may(a.Company) {
			continue
		}
		v := AssignmentView{DefinitionID: a.DefinitionID, MinionID: a.MinionID, Company: a.Company,
			CreatedAt: a.CreatedAt}
		if d, err := o.r.Definition(ctx, a.DefinitionID); err == nil && o.may(d.Company) {
			v.DefinitionName = d.Name
		} else if err != nil && !errors.Is(err, catalog.ErrNotFound) {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

// Executions lists the executions on one server within the allowed companies, in creation order.
func (o *Observer) Executions(ctx context.Context, minionID string) ([]ExecutionView, error) {
	all, err := o.r.Executions(ctx, minionID)
	if err != nil {
		return nil, err
	}
	var out []ExecutionView
	for _, e := range all {
		if o.may(e.Company) {
			out = append(out, ViewOf(e))
		}
	}
	return out, nil
}

// Execution returns the view of the execution a request id names or points to.
func (o *Observer) Execution(ctx context.Context, requestID string) (ExecutionView, error) {
	e, _, err := o.r.Resolve(ctx, requestID)
	if err != nil {
		return ExecutionView{}, err
	}
	if !o.may(e.Company) {
		return ExecutionView{}, hidden()
	}
	return ViewOf(e), nil
}
