package main

import (
	"net/http"
	"slices"
	"strings"
)

// Role is what a caller may do.
type Role string

// The two roles of the custom-states feature (administrator and observer).
const (
	RoleAdmin    Role = "admin"
	RoleObserver Role = "observer"
)

// Identity is the caller. FOR THIS EXAMPLE ONLY it comes from headers (see doc.go).
type Identity struct {
	User      string
	Role      Role
	Companies []string // observers: the companies they may read
}

// Header names of the example's identity scheme.
const (
	HeaderUser      = "X-Oduflow-User"
	HeaderRole      = "X-Oduflow-Role"
	HeaderCompanies = "X-Oduflow-Companies"
)

// identityFrom reads the example identity; ok is false when it is missing or malformed.
func identityFrom(r *http.Request) (Identity, bool) {
	id := Identity{User: strings.TrimSpace(r.Header.Get(HeaderUser)), Role: Role(r.Header.Get(HeaderRole))}
	if id.User == "" || (id.Role != RoleAdmin && id.Role != RoleObserver) {
		return Identity{}, false
	}
	for _, c := range strings.Split(r.Header.Get(HeaderCompanies), ",") {
		if c = strings.TrimSpace(c); c != "" {
			id.Companies = append(id.Companies, c)
		}
	}
	return id, true
}

// CanExecute: only administrators start requests and apply custom states.
func (id Identity) CanExecute() bool { return id.Role == RoleAdmin }

// CanEdit: only administrators create, edit, validate, assign custom states or read source.
func (id Identity) CanEdit() bool { return id.Role == RoleAdmin }

// CanRead reports whether the caller may read records of company: administrators all,
// observers their allowed companies.
func (id Identity) CanRead(company string) bool {
	return id.Role == RoleAdmin || (company != "" && slices.Contains(id.Companies, company))
}
