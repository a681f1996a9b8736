package profiles

import (
	"github.com/cockroachdb/errors"

	"github.com/oduflow/oduflow-go/internal/errmark"
	"github.com/oduflow/oduflow-go/receipt"
)

// Role is a fixed Salt state (an sls name under the master's file roots) that
// a fixed profile applies. Roles are compiled into this package: no caller
// ever supplies a state name, function, argument, pillar or path.
type Role string

// The fixed roles, one per fixed profile (see Fixed).
const (
	roleClientStack         Role = "roles.client_stack"
	roleClientProduction    Role = "roles.client_production"
	roleClientStorageResize Role = "roles.client_storage_resize"
	roleClientCredentials   Role = "roles.client_credentials"
)

// String returns the sls name of the role.
func (r Role) String() string { return string(r) }

// ErrCustomHasNoRole is returned by RoleFor for receipt.ProfileCustom: a custom
// profile runs digest-bound high data compiled by CompileCustom, never a role.
var ErrCustomHasNoRole = errors.New("profiles: the custom profile has no fixed role")

// RoleFor returns the fixed role of a fixed profile. It returns
// ErrCustomHasNoRole for receipt.ProfileCustom and an error matching
// receipt.ErrUnknownProfile (errors.Is) for anything that is not exactly one of
// the protocol 1 profiles.
func RoleFor(p receipt.Profile) (_ Role, err error) {
	defer errmark.Boundary(&err)
	switch p {
	case receipt.ProfileConfigure:
		return roleClientStack, nil
	case receipt.ProfileProduction:
		return roleClientProduction, nil
	case receipt.ProfileVolumeResize:
		return roleClientStorageResize, nil
	case receipt.ProfileCredentials:
		return roleClientCredentials, nil
	case receipt.ProfileCustom:
		return "", errors.WithStack(ErrCustomHasNoRole)
	}
	return "", errors.WithStack(receipt.ErrUnknownProfile)
}

// Fixed returns a fresh copy of the fixed profile -> role table. It holds the
// four fixed profiles only; receipt.ProfileCustom is absent. Callers may
// modify the returned map: it is rebuilt on every call.
func Fixed() map[receipt.Profile]Role {
	return map[receipt.Profile]Role{
		receipt.ProfileConfigure:    roleClientStack,
		receipt.ProfileProduction:   roleClientProduction,
		receipt.ProfileVolumeResize: roleClientStorageResize,
		receipt.ProfileCredentials:  roleClientCredentials,
	}
}
