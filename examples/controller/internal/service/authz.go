package service

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/oduflow/oduflow-go/examples/internal/oduflowenv"
	"github.com/oduflow/oduflow-go/oduflow/catalog"
)

// access is what a route declares about its callers: the role it needs, whether it writes, and the
// scope of its targets against the principal's companies. authorize enforces all of it before the
// handler runs (protect for the API, uiProtect for the console, call for the console's calls into the
// API): no handler checks a role or a company. What a handler reads instead is the grant authorize made
// (grantOf): the targets it resolved and checked, and the principal's companies to filter a listing by.
type access struct {
	admin    bool // only an administrator (of some company); else any authenticated principal
	mutating bool
	scope    scope
}

// scope says which targets of a route authorize checks against the principal's companies (a set).
type scope uint8

const (
	scopeNone        scope = 0               // no target: metrics, validate, unknown routes
	scopeMinion      scope = 1 << (iota - 1) // the {minion}'s company (ODUFLOW_CLIENTS)
	scopeDefinition                          // the {id} definition's company
	scopeBodyCompany                         // the company named in the body (create)
	scopeListed                              // a listing: the handler keeps the rows grant.sees
)

func anyReads(sc scope) access    { return access{scope: sc} }
func adminReads(sc scope) access  { return access{admin: true, scope: sc} }
func adminWrites(sc scope) access { return access{admin: true, mutating: true, scope: sc} }

// grant is what authorize found for one request: the principal's role and companies and the route's
// targets it checked. Handlers read it; they never decide on the principal themselves.
type grant struct {
	p          Principal
	minion     string             // scopeMinion: the {minion}, checked
	company    string             // scopeMinion: its company ("" unbound)
	definition catalog.Definition // scopeDefinition: the {id} definition, in the principal's companies
}

// admin: the principal is an administrator (reads sources and digests; the route's role is checked).
func (g grant) admin() bool { return g.p.IsAdministrator() }

// sees reports whether a row of company belongs in the principal's view (scopeListed, and the records a
// checked target holds: executions, assignments).
func (g grant) sees(company string) bool { return g.p.InCompany(company) }

type grantKey struct{}

// grantOf is the request's grant (authorize set it).
func grantOf(r *http.Request) grant {
	g, _ := r.Context().Value(grantKey{}).(grant)
	return g
}

// authorize enforces a route's declaration for principal p: 403 forbidden_role when the route is an
// administrator's and p is not, then each declared scope (400 for a malformed target, 404 for an unknown
// definition, 409 unbound_client for a write to an unbound client, 403 forbidden_company outside p's
// companies). It runs before the handler, so before anything is written; it has answered when ok is false.
func (s *Service) authorize(w http.ResponseWriter, r *http.Request, op string, a access, p Principal) (*http.Request, bool) {
	if a.admin && !p.IsAdministrator() {
		s.writeError(w, r, op, http.StatusForbidden, body(op+": refused: the principal's role is not administrator", exitNothingWritten, "forbidden_role"))
		return nil, false
	}
	g := grant{p: p}
	if a.scope&scopeMinion != 0 && !s.minionScope(w, r, op, a.mutating, &g) {
		return nil, false
	}
	if a.scope&scopeDefinition != 0 && !s.definitionScope(w, r, op, &g) {
		return nil, false
	}
	if a.scope&scopeBodyCompany != 0 && !s.bodyCompanyScope(w, r, op, p) {
		return nil, false
	}
	return r.WithContext(context.WithValue(r.Context(), grantKey{}, g)), true
}

// companyScope answers 403 forbidden_company unless company is one of p's.
func (s *Service) companyScope(w http.ResponseWriter, r *http.Request, op, company string, p Principal) bool {
	auditOf(r.Context()).company = company
	if p.InCompany(company) {
		return true
	}
	s.writeError(w, r, op, http.StatusForbidden, body(op+": refused: outside the principal's companies", exitNothingWritten, "forbidden_company"))
	return false
}

// minionScope checks {minion} (400 when malformed) and resolves its company through the client bindings
// (ODUFLOW_CLIENTS). An unbound client is 409 unbound_client for a write by an administrator; it is
// readable only by a principal of every company ("*"). A bound client of another company is 403.
func (s *Service) minionScope(w http.ResponseWriter, r *http.Request, op string, write bool, g *grant) bool {
	minion := r.PathValue("minion")
	if err := oduflowenv.CheckMinionIn(op, minion, s.table); err != nil {
		s.fail(w, r, op, err)
		return false
	}
	company, bound := s.clients[minion]
	if !bound && write && g.p.IsAdministrator() {
		s.writeError(w, r, op, http.StatusConflict, body(op+": refused: the client is not bound to a company (ODUFLOW_CLIENTS); nothing written",
			exitNothingWritten, "unbound_client"))
		return false
	}
	if !s.companyScope(w, r, op, company, g.p) {
		return false
	}
	g.minion, g.company = minion, company
	return true
}

// definitionScope reads {id} and checks its company (404 unknown, 403 another company's).
func (s *Service) definitionScope(w http.ResponseWriter, r *http.Request, op string, g *grant) bool {
	d, err := s.cat.Definition(r.Context(), r.PathValue("id"))
	if err != nil {
		s.fail(w, r, op, err)
		return false
	}
	if !s.companyScope(w, r, op, d.Company, g.p) {
		return false
	}
	g.definition = d
	return true
}

// bodyCompanyScope checks the company a create names: the form field company (the console), else the
// JSON body's "company" (read here within MaxCustomBodyBytes and put back for the handler, which decodes
// it strictly). A body that is not a JSON object is left to the handler's 400; a malformed company is 400.
func (s *Service) bodyCompanyScope(w http.ResponseWriter, r *http.Request, op string, p Principal) bool {
	var in struct {
		Company string `json:"company"`
	}
	if strings.HasPrefix(r.Header.Get("Content-Type"), "application/x-www-form-urlencoded") {
		in.Company = r.PostFormValue("company")
	} else {
		b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxCustomBodyBytes))
		if err != nil {
			s.fail(w, r, op, fmt.Errorf("%s: body over %d bytes: %w", op, MaxCustomBodyBytes, err))
			return false
		}
		r.Body = io.NopCloser(bytes.NewReader(b))
		if json.Unmarshal(b, &in) != nil {
			return true // not a JSON object with a string company: the handler refuses it (400)
		}
	}
	if !validCompany(in.Company) {
		s.fail(w, r, op, usageError(op+": company: want 1-128 letters, digits or . _ -"))
		return false
	}
	return s.companyScope(w, r, op, in.Company, p)
}
