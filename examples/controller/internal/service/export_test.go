package service

import "strings"

// RouteDecl is one API route's declaration as the route table holds it (the every-route test reads the
// table itself, never a copy of it).
type RouteDecl struct {
	Pattern, Method, Action string
	Admin, Mutating         bool
	// The declared scope: which targets authorize checks against the caller's companies.
	Minion, Definition, BodyCompany, Listed bool
}

// Routes is the API's route table.
func Routes(s *Service) []RouteDecl { return decls(s.apiRoutes()) }

// ConsoleRoutes is the console's route table.
func ConsoleRoutes(s *Service) []RouteDecl { return decls(s.uiRouteTable()) }

func decls(routes []apiRoute) []RouteDecl {
	var out []RouteDecl
	for _, rt := range routes {
		method, _, ok := strings.Cut(rt.pattern, " ")
		if !ok {
			method = "" // any method ("/")
		}
		a := rt.access
		out = append(out, RouteDecl{Pattern: rt.pattern, Method: method, Action: rt.action, Admin: a.admin,
			Mutating: a.mutating, Minion: a.scope&scopeMinion != 0, Definition: a.scope&scopeDefinition != 0,
			BodyCompany: a.scope&scopeBodyCompany != 0, Listed: a.scope&scopeListed != 0})
	}
	return out
}

// WithoutAdoption runs the service's Dispatcher without its adoption loop (a service runs one), so that
// Dispatcher.Wait returns once the workers have ended: the tests wait on that instead of sleeping.
func WithoutAdoption() Option { return func(o *options) { o.noAdoption = true } }
