package service

import (
	"net/http"

	"github.com/oduflow/oduflow-go/examples/internal/oduflowenv"
)

// requireAdmin answers 403 forbidden_role unless the principal is an administrator. It runs before the
// body is read and before anything is looked up or written.
func (s *Service) requireAdmin(w http.ResponseWriter, r *http.Request, op string) bool {
	if principalOf(r.Context()).IsAdministrator() {
		return true
	}
	s.writeError(w, r, op, http.StatusForbidden, body(op+": refused: the principal's role is not administrator", exitNothingWritten, "forbidden_role"))
	return false
}

// companyScope answers 403 forbidden_company unless company is one of the principal's.
func (s *Service) companyScope(w http.ResponseWriter, r *http.Request, op, company string) bool {
	auditOf(r.Context()).company = company
	if principalOf(r.Context()).InCompany(company) {
		return true
	}
	s.writeError(w, r, op, http.StatusForbidden, body(op+": refused: outside the principal's companies", exitNothingWritten, "forbidden_company"))
	return false
}

// minionScope checks {minion} (400 when malformed) and resolves its company through the client bindings
// (ODUFLOW_CLIENTS). An unbound client is 409 unbound_client for a write, whoever asks; it is readable
// only by a principal of every company ("*"). A bound client of another company is 403.
func (s *Service) minionScope(w http.ResponseWriter, r *http.Request, op string, write bool) (minion, company string, ok bool) {
	minion = r.PathValue("minion")
	if err := oduflowenv.CheckMinionIn(op, minion, s.table); err != nil {
		s.fail(w, r, op, err)
		return "", "", false
	}
	company, bound := s.clients[minion]
	if !bound && write && principalOf(r.Context()).IsAdministrator() {
		s.writeError(w, r, op, http.StatusConflict, body(op+": refused: the client is not bound to a company (ODUFLOW_CLIENTS); nothing written",
			exitNothingWritten, "unbound_client"))
		return "", "", false
	}
	if !s.companyScope(w, r, op, company) {
		return "", "", false
	}
	return minion, company, true
}
