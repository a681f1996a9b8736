package service

import (
	"net/http"

	"github.com/oduflow/oduflow-go/examples/internal/oduflowenv"
)

// access is what a route declares about its callers: the role it needs, whether it writes, and the
// scope its handler checks against the principal's companies (documentation for the reader of the route
// table; the handler enforces it, since it needs the route's target). protect and uiProtect enforce the
// role before the handler runs: no handler checks a role.
type access struct {
	admin    bool // only an administrator (of some company); else any authenticated principal
	mutating bool
	scope    scope
}

// scope says against what a route's handler checks the principal's companies.
type scope int

const (
	scopeNone        scope = iota // no company: metrics, validate, unknown routes
	scopeMinion                   // the {minion}'s company (ODUFLOW_CLIENTS)
	scopeDefinition               // the {id} definition's company
	scopeBodyCompany              // the company named in the body (create)
	scopeListed                   // a listing filtered to the principal's companies
)

func anyReads(sc scope) access    { return access{scope: sc} }
func adminReads(sc scope) access  { return access{admin: true, scope: sc} }
func adminWrites(sc scope) access { return access{admin: true, mutating: true, scope: sc} }

// permits answers 403 forbidden_role when the route is an administrator's and the principal is not. It
// runs before the handler, so before any body is read or anything is written.
func (s *Service) permits(w http.ResponseWriter, r *http.Request, op string, a access, p Principal) bool {
	if !a.admin || p.IsAdministrator() {
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
