package service

import "slices"

// Role is what a principal may do: administrators act, observers read.
type Role string

const (
	// RoleAdministrator starts fixed profiles, creates and edits custom definitions, validates, assigns
	// and applies them, and reads everything of its companies, custom source included.
	RoleAdministrator Role = "administrator"
	// RoleObserver reads status, readiness, assignments and definitions' metadata of its companies:
	// never source, never a write.
	RoleObserver Role = "observer"
)

// parseRole accepts the two role names.
func parseRole(s string) (Role, bool) {
	switch r := Role(s); r {
	case RoleAdministrator, RoleObserver:
		return r, true
	}
	return "", false
}

// Principal is an authenticated caller: its name (a token file's NAME, or a client certificate's
// subject CommonName), its role and the companies it is limited to.
type Principal struct {
	Name      string
	Role      Role
	Companies []string // the companies, sorted; empty when All
	All       bool     // "*": every company, unbound clients included
}

// IsAdministrator reports whether p may act (start, apply, edit).
func (p Principal) IsAdministrator() bool { return p.Role == RoleAdministrator }

// InCompany reports whether p's companies include company ("" is an unbound client: only All).
func (p Principal) InCompany(company string) bool {
	if p.All {
		return true
	}
	return company != "" && slices.Contains(p.Companies, company)
}

// companyLabel is the principal's companies for the audit log.
func (p Principal) companyLabel() string {
	if p.All {
		return "*"
	}
	return joinComma(p.Companies)
}

func joinComma(s []string) string {
	out := ""
	for i, c := range s {
		if i > 0 {
			out += ","
		}
		out += c
	}
	return out
}
