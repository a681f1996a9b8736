package main

import (
	"net/http"
)

// startRequest: POST /v1/servers/{minion}/profiles/{profile}/requests (administrators).
// Repeating it with the same request_id returns the request's current status and never
// publishes again.
func (s *Service) startRequest(w http.ResponseWriter, r *http.Request, id Identity) {
	minion, _, ok := s.serverAllowed(w, r, id, id.CanExecute(), "starting a request")
	if !ok {
		return
	}
	profile, ok := parseProfile(r.PathValue("profile"))
	if !ok {
		writeError(w, http.StatusBadRequest, "invalid_input", "unknown profile: want configure, production, volume_resize or credentials")
		return
	}
	var body struct {
		RequestID string `json:"request_id"`
	}
	if !decode(w, r, &body) {
		return
	}
	body.RequestID = requestIDOrNew(body.RequestID)
	resp, err := s.d.Start(r.Context(), minion, body.RequestID, profile)
	s.reply(w, r, http.StatusAccepted, resp, err)
}

// requestStatus: GET /v1/servers/{minion}/profiles/{profile}/requests/{request}
// (administrators, and observers of the server's company): exactly the response object.
func (s *Service) requestStatus(w http.ResponseWriter, r *http.Request, id Identity) {
	minion, _, ok := s.server(w, r, id)
	if !ok {
		return
	}
	profile, ok := parseProfile(r.PathValue("profile"))
	if !ok {
		writeError(w, http.StatusBadRequest, "invalid_input", "unknown profile")
		return
	}
	resp, err := s.d.Status(r.Context(), minion, r.PathValue("request"), profile)
	s.reply(w, r, http.StatusOK, resp, err)
}
