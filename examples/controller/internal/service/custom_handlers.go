package service

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/oduflow/oduflow-go/examples/internal/oduflowenv"
	"github.com/oduflow/oduflow-go/oduflow/catalog"
	"github.com/oduflow/oduflow-go/profiles"
	"github.com/oduflow/oduflow-go/receipt"
)

// MaxCustomBodyBytes bounds a custom-state request body: a source of profiles.MaxSourceBytes, JSON-escaped.
const MaxCustomBodyBytes = 4*profiles.MaxSourceBytes + 4096

// sourceBody is the body of validate and save.
type sourceBody struct {
	Source string `json:"source"`
}

func (s *Service) validateCustom(w http.ResponseWriter, r *http.Request) {
	const op = "custom_validate"
	var in sourceBody
	if err := decodeBody(w, r, op, MaxCustomBodyBytes, false, &in); err != nil {
		s.fail(w, r, op, err)
		return
	}
	c, err := profiles.CompileCustom([]byte(in.Source))
	if err != nil {
		s.invalidSource(w, r, op, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"valid": true, "digest": c.Digest, "states": len(c.HighData)})
}

// invalidSource answers a compiler refusal as 422 with its code, line and column (never the source), or
// err as fail maps it.
func (s *Service) invalidSource(w http.ResponseWriter, r *http.Request, op string, err error) {
	var ce *profiles.CustomError
	if !errors.As(err, &ce) {
		s.fail(w, r, op, err)
		return
	}
	auditOf(r.Context()).errorCode = "invalid_source"
	writeJSON(w, http.StatusUnprocessableEntity, map[string]any{"valid": false,
		"error": fmt.Sprintf("%s: invalid custom source: %s at line %d, column %d", op, ce.Code, ce.Line, ce.Column),
		"code":  oduflowenv.ExitName(oduflowenv.ExitUsage), "exit_status": oduflowenv.ExitUsage, "reason": "invalid_source",
		"source_error": map[string]any{"code": ce.Code, "message": ce.Message, "line": ce.Line, "column": ce.Column}})
}

func (s *Service) createCustom(w http.ResponseWriter, r *http.Request) {
	const op = "custom_create"
	var in struct {
		Company string `json:"company"`
		Name    string `json:"name"`
		Source  string `json:"source"`
	}
	if err := decodeBody(w, r, op, MaxCustomBodyBytes, false, &in); err != nil {
		s.fail(w, r, op, err)
		return
	}
	if !validCompany(in.Company) { // authorize checked it (scopeBodyCompany) in the same bytes
		s.fail(w, r, op, usageError(op+": company: want 1-128 letters, digits or . _ -"))
		return
	}
	d, err := s.cat.CreateDefinition(r.Context(), in.Company, in.Name, []byte(in.Source))
	if err != nil {
		s.invalidSource(w, r, op, err)
		return
	}
	writeJSON(w, http.StatusCreated, viewOfDefinition(d, s.seesDigest(r)))
}

func (s *Service) listCustom(w http.ResponseWriter, r *http.Request) {
	defs, err := s.cat.Definitions(r.Context())
	if err != nil {
		s.fail(w, r, "custom_list", err)
		return
	}
	g := grantOf(r)
	out := []definitionView{}
	for _, d := range defs {
		if g.sees(d.Company) {
			out = append(out, viewOfDefinition(d, s.seesDigest(r)))
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"definitions": out})
}

// getCustom: administrators of the definition's company read its source, observers its metadata.
func (s *Service) getCustom(w http.ResponseWriter, r *http.Request) {
	d := grantOf(r).definition // authorize read it (scopeDefinition)
	if !grantOf(r).admin() {
		writeJSON(w, http.StatusOK, viewOfDefinition(d, s.seesDigest(r)))
		return
	}
	writeJSON(w, http.StatusOK, definitionSource{definitionView: viewOfDefinition(d, true), Source: string(d.Source)})
}

// saveCustom replaces the source: changed source is a new revision; frozen executions do not change.
func (s *Service) saveCustom(w http.ResponseWriter, r *http.Request) {
	const op = "custom_save"
	d := grantOf(r).definition // its company is authorized before the body is read (scopeDefinition)
	var in sourceBody
	if err := decodeBody(w, r, op, MaxCustomBodyBytes, false, &in); err != nil {
		s.fail(w, r, op, err)
		return
	}
	d, err := s.cat.SaveSource(r.Context(), d.ID, []byte(in.Source))
	if err != nil {
		s.invalidSource(w, r, op, err)
		return
	}
	writeJSON(w, http.StatusOK, viewOfDefinition(d, s.seesDigest(r)))
}

// assignCustom assigns a definition to a client of the definition's company (the client's binding).
func (s *Service) assignCustom(w http.ResponseWriter, r *http.Request) {
	const op = "custom_assign"
	g := grantOf(r) // the client and the definition, checked (scopeMinion | scopeDefinition)
	minion, company, d := g.minion, g.company, g.definition
	if err := d.AssignableTo(company); err != nil {
		s.fail(w, r, op, err)
		return
	}
	a, err := s.cat.Assign(r.Context(), d.ID, minion, company)
	if err != nil {
		s.fail(w, r, op, err)
		return
	}
	writeJSON(w, http.StatusOK, assignmentView{DefinitionID: a.DefinitionID, DefinitionName: d.Name, Revision: d.Revision,
		MinionID: a.MinionID, Company: a.Company, CreatedAt: a.CreatedAt})
}

func (s *Service) listAssignments(w http.ResponseWriter, r *http.Request) {
	const op = "custom_assignments"
	g := grantOf(r)
	as, err := s.cat.Assignments(r.Context(), g.minion)
	if err != nil {
		s.fail(w, r, op, err)
		return
	}
	out := []assignmentView{}
	for _, a := range as {
		if !g.sees(a.Company) {
			continue
		}
		v := assignmentView{DefinitionID: a.DefinitionID, MinionID: a.MinionID, Company: a.Company, CreatedAt: a.CreatedAt}
		if d, err := s.cat.Definition(r.Context(), a.DefinitionID); err == nil {
			v.DefinitionName, v.Revision = d.Name, d.Revision
		}
		out = append(out, v)
	}
	writeJSON(w, http.StatusOK, map[string]any{"assignments": out})
}

// applyBody is the optional body of an apply: the request id (new when absent) and again (apply again
// after a known terminal result: catalog.ModeApplyAgain).
type applyBody struct {
	RequestID string `json:"request_id"`
	Again     bool   `json:"again"`
}

// applyCustom applies an assigned definition. The same request id again answers from its execution and
// never publishes again; a running or succeeded execution of the same digest is reused (the response's
// reused says which), as oduflow.Dispatcher.CustomStart decides.
func (s *Service) applyCustom(w http.ResponseWriter, r *http.Request) {
	const op = "custom_apply"
	g := grantOf(r) // the client and the definition, checked before the body is read
	minion := g.minion
	if err := g.definition.AssignableTo(g.company); err != nil {
		s.fail(w, r, op, err)
		return
	}
	var in applyBody
	if err := decodeBody(w, r, op, MaxBodyBytes, true, &in); err != nil {
		s.fail(w, r, op, err)
		return
	}
	key := ""
	if in.RequestID == "" {
		in.RequestID = receipt.NewRequestID()
		key = oduflowenv.ScopedRequestID(minion, in.RequestID)
	} else if err := oduflowenv.CheckRequest(op, in.RequestID); err != nil {
		s.fail(w, r, op, err)
		return
	}
	auditOf(r.Context()).noteRequest(in.RequestID)
	if key == "" {
		var err error
		if key, err = s.requestKey(r.Context(), minion, in.RequestID); err != nil {
			s.fail(w, r, op, err)
			return
		}
	}
	mode := catalog.ModeApply
	if in.Again {
		mode = catalog.ModeApplyAgain
	}
	ctx, created := withCreatedFlag(r.Context())
	resp, err := s.d.CustomStart(ctx, minion, key, r.PathValue("id"), mode)
	if err != nil {
		s.fail(w, r, op, asCaller(err, key, in.RequestID))
		return
	}
	resp = callerCustom(resp, key, in.RequestID)
	code := http.StatusOK
	if created.Load() {
		code = http.StatusCreated
	}
	writeJSON(w, code, resp)
}

func (s *Service) listExecutions(w http.ResponseWriter, r *http.Request) {
	const op = "custom_executions"
	g := grantOf(r)
	es, err := s.cat.Executions(r.Context(), g.minion)
	if err != nil {
		s.fail(w, r, op, err)
		return
	}
	out := []executionView{}
	for _, e := range es {
		if g.sees(e.Company) {
			out = append(out, viewOfExecution(e, s.seesDigest(r)))
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"executions": out})
}

// executionStatus is the live custom status and the execution record of a request id (its own
// execution, or the one it points to).
func (s *Service) executionStatus(w http.ResponseWriter, r *http.Request) {
	const op = "custom_status"
	minion, request, key, e, ok := s.executionOf(w, r, op)
	if !ok {
		return
	}
	st, err := s.d.CustomStatus(r.Context(), minion, key)
	if err != nil {
		s.fail(w, r, op, asCaller(err, key, request))
		return
	}
	v := viewOfExecution(e, s.seesDigest(r))
	if v.RequestID == key {
		v.RequestID = request
	}
	writeJSON(w, http.StatusOK, map[string]any{"status": callerCustom(st, key, request), "execution": v})
}

// executionOf reads and authorizes the custom execution a route names ({minion}, {request_id}): the
// client in the caller's companies, the caller's request id, its stored key (scope.go) and the execution,
// which must be the client's and of a company of the caller's (else not found, as an id never seen). It
// has answered (ok false) when it refuses.
func (s *Service) executionOf(w http.ResponseWriter, r *http.Request, op string) (minion, request, key string, e catalog.Execution, ok bool) {
	minion = grantOf(r).minion // checked (scopeMinion)
	request = r.PathValue("request_id")
	if err := oduflowenv.CheckRequest(op, request); err != nil {
		s.fail(w, r, op, err)
		return "", "", "", e, false
	}
	key, err := s.requestKey(r.Context(), minion, request)
	if err != nil {
		s.fail(w, r, op, err)
		return "", "", "", e, false
	}
	e, _, err = s.cat.Resolve(r.Context(), key)
	if errors.Is(err, catalog.ErrNotFound) || err == nil && (e.MinionID != minion || !grantOf(r).sees(e.Company)) {
		s.fail(w, r, op, fmt.Errorf("%s: no execution of this client for the request: %w", op, catalog.ErrNotFound))
		return "", "", "", e, false
	} else if err != nil {
		s.fail(w, r, op, asCaller(err, key, request))
		return "", "", "", e, false
	}
	return minion, request, key, e, true
}
