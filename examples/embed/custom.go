package main

import (
	"fmt"
	"net/http"

	"github.com/oduflow/oduflow-go/oduflow"
	"github.com/oduflow/oduflow-go/oduflow/catalog"
	"github.com/oduflow/oduflow-go/profiles"
)

// adminDefinition is a definition as administrators read it: with its source.
type adminDefinition struct {
	DefinitionView
	Source string `json:"source"`
}

func viewOfDefinition(d catalog.Definition) DefinitionView {
	return DefinitionView{ID: d.ID, Company: d.Company, Name: d.Name, Revision: d.Revision,
		Digest: d.Digest, UpdatedAt: d.UpdatedAt}
}

// validateCustom: POST /v1/custom-states/validate (administrators). Nothing is executed.
func (s *Service) validateCustom(w http.ResponseWriter, r *http.Request, id Identity) {
	var body struct {
		Source string `json:"source"`
	}
	if !decodeAllowed(w, r, id.CanEdit(), "validating custom states", &body) {
		return
	}
	c, err := profiles.CompileCustom([]byte(body.Source))
	if err != nil {
		s.fail(r.Context(), w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"valid": true, "digest": c.Digest, "states": len(c.HighData)})
}

// createCustom: POST /v1/custom-states (administrators).
func (s *Service) createCustom(w http.ResponseWriter, r *http.Request, id Identity) {
	var body struct {
		Company string `json:"company"`
		Name    string `json:"name"`
		Source  string `json:"source"`
	}
	if !decodeAllowed(w, r, id.CanEdit(), "editing custom states", &body) {
		return
	}
	d, err := s.cat.CreateDefinition(r.Context(), body.Company, body.Name, []byte(body.Source))
	s.reply(w, r, http.StatusCreated, viewOfDefinition(d), err)
}

// saveCustom: PUT /v1/custom-states/{id}/source (administrators). Changed source increments
// the revision; executions already frozen do not change.
func (s *Service) saveCustom(w http.ResponseWriter, r *http.Request, id Identity) {
	var body struct {
		Source string `json:"source"`
	}
	if !decodeAllowed(w, r, id.CanEdit(), "editing custom states", &body) {
		return
	}
	d, err := s.cat.SaveSource(r.Context(), r.PathValue("id"), []byte(body.Source))
	s.reply(w, r, http.StatusOK, viewOfDefinition(d), err)
}

// listCustom: GET /v1/custom-states. Administrators: every definition; observers: those of
// their companies. Neither list carries source.
func (s *Service) listCustom(w http.ResponseWriter, r *http.Request, id Identity) {
	if !id.CanEdit() {
		views, err := NewObserver(s.cat, id.Companies...).Definitions(r.Context())
		s.reply(w, r, http.StatusOK, nonNil(views), err)
		return
	}
	defs, err := s.cat.Definitions(r.Context())
	if err != nil {
		s.fail(r.Context(), w, err)
		return
	}
	views := make([]DefinitionView, 0, len(defs))
	for _, d := range defs {
		views = append(views, viewOfDefinition(d))
	}
	writeJSON(w, http.StatusOK, views)
}

// getCustom: GET /v1/custom-states/{id} (administrators: the source is theirs to read).
func (s *Service) getCustom(w http.ResponseWriter, r *http.Request, id Identity) {
	if !id.CanEdit() {
		forbidden(w, "reading custom state source")
		return
	}
	d, err := s.cat.Definition(r.Context(), r.PathValue("id"))
	s.reply(w, r, http.StatusOK, adminDefinition{DefinitionView: viewOfDefinition(d), Source: string(d.Source)}, err)
}

// assignCustom: PUT /v1/servers/{minion}/custom-states/{id} (administrators).
func (s *Service) assignCustom(w http.ResponseWriter, r *http.Request, id Identity) {
	minion, company, ok := s.serverAllowed(w, r, id, id.CanEdit(), "assigning custom states")
	if !ok {
		return
	}
	a, err := s.cat.Assign(r.Context(), r.PathValue("id"), minion, company)
	s.reply(w, r, http.StatusOK, a, err)
}

// listAssignments: GET /v1/servers/{minion}/custom-states (administrators, observers).
func (s *Service) listAssignments(w http.ResponseWriter, r *http.Request, id Identity) {
	minion, _, ok := s.server(w, r, id)
	if !ok {
		return
	}
	if id.CanEdit() {
		as, err := s.cat.Assignments(r.Context(), minion)
		s.reply(w, r, http.StatusOK, nonNil(as), err)
		return
	}
	views, err := NewObserver(s.cat, id.Companies...).Assignments(r.Context(), minion)
	s.reply(w, r, http.StatusOK, nonNil(views), err)
}

// applyCustom: POST /v1/servers/{minion}/custom-states/{id}/apply (administrators). Body
// {"request_id": optional, "again": bool}. Repeated Apply with the same request id reuses the
// current execution; "again" asks explicitly for another execution after a known terminal
// result.
func (s *Service) applyCustom(w http.ResponseWriter, r *http.Request, id Identity) {
	minion, _, ok := s.serverAllowed(w, r, id, id.CanExecute(), "applying custom states")
	if !ok {
		return
	}
	var body struct {
		RequestID string `json:"request_id"`
		Again     bool   `json:"again"`
	}
	if !decode(w, r, &body) {
		return
	}
	body.RequestID = requestIDOrNew(body.RequestID)
	mode := catalog.ModeApply
	if body.Again {
		mode = catalog.ModeApplyAgain
	}
	resp, err := s.d.CustomStart(r.Context(), minion, body.RequestID, r.PathValue("id"), mode)
	s.reply(w, r, http.StatusAccepted, resp, err)
}

// listExecutions: GET /v1/servers/{minion}/custom-executions (administrators, observers):
// sanitized views (identities, revision, digest, status, counts, error code).
func (s *Service) listExecutions(w http.ResponseWriter, r *http.Request, id Identity) {
	minion, _, ok := s.server(w, r, id)
	if !ok {
		return
	}
	if !id.CanEdit() {
		views, err := NewObserver(s.cat, id.Companies...).Executions(r.Context(), minion)
		s.reply(w, r, http.StatusOK, nonNil(views), err)
		return
	}
	es, err := s.cat.Executions(r.Context(), minion)
	if err != nil {
		s.fail(r.Context(), w, err)
		return
	}
	views := make([]ExecutionView, 0, len(es))
	for _, e := range es {
		views = append(views, ViewOf(e))
	}
	writeJSON(w, http.StatusOK, views)
}

// executionStatus: GET /v1/servers/{minion}/custom-executions/{request} (administrators,
// observers): the live custom status and the sanitized execution record.
func (s *Service) executionStatus(w http.ResponseWriter, r *http.Request, id Identity) {
	minion, _, ok := s.server(w, r, id)
	if !ok {
		return
	}
	request := r.PathValue("request")
	var view ExecutionView
	if id.CanEdit() {
		e, _, err := s.cat.Resolve(r.Context(), request)
		if err != nil {
			s.fail(r.Context(), w, err)
			return
		}
		view = ViewOf(e)
	} else {
		v, err := NewObserver(s.cat, id.Companies...).Execution(r.Context(), request)
		if err != nil {
			s.fail(r.Context(), w, err)
			return
		}
		view = v
	}
	if view.MinionID != minion {
		s.fail(r.Context(), w, fmt.Errorf("execution of another server: %w", catalog.ErrNotFound))
		return
	}
	st, err := s.d.CustomStatus(r.Context(), minion, request)
	if err != nil {
		s.fail(r.Context(), w, err)
		return
	}
	writeJSON(w, http.StatusOK, struct {
		Status    oduflow.CustomResponse `json:"status"`
		Execution ExecutionView          `json:"execution"`
	}{st, view})
}

// nonNil makes an empty list encode as [] rather than null.
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
