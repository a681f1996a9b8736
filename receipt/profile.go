package receipt

import (
	"github.com/cockroachdb/errors"

	"github.com/oduflow/oduflow-go/internal/errmark"
)

// protocolVersion is the receipt protocol version implemented by this package (Receipt.Protocol).
const protocolVersion = 1

// Profile selects what a request runs: one of four fixed roles, or a custom
// payload bound by its digest.
type Profile string

// The protocol 1 profiles.
const (
	ProfileConfigure    Profile = "configure"
	ProfileProduction   Profile = "production"
	ProfileVolumeResize Profile = "volume_resize"
	ProfileCredentials  Profile = "credentials"
	ProfileCustom       Profile = "custom"
)

// allProfiles returns every protocol 1 profile in a fixed order.
func allProfiles() []Profile {
	return []Profile{ProfileConfigure, ProfileProduction, ProfileVolumeResize, ProfileCredentials, ProfileCustom}
}

// Valid reports whether p is one of the protocol 1 profiles (exact spelling).
func (p Profile) Valid() bool {
	switch p {
	case ProfileConfigure, ProfileProduction, ProfileVolumeResize, ProfileCredentials, ProfileCustom:
		return true
	}
	return false
}

// ValidName reports whether p is a profile name a receipt or a claim may
// carry: one of the protocol 1 profiles, or a profile of an operator's
// profile table (profiles.Table): [a-z][a-z0-9_]{0,31}. Which names a
// dispatcher or a minion runs is its table's business, not the receipt's.
func (p Profile) ValidName() bool {
	if len(p) == 0 || len(p) > 32 || p[0] < 'a' || p[0] > 'z' {
		return false
	}
	for i := 1; i < len(p); i++ {
		c := p[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// Fixed reports whether p runs a fixed role (all but custom).
func (p Profile) Fixed() bool { return p.Valid() && p != ProfileCustom }

// ParseProfile returns the profile spelled exactly s, or ErrUnknownProfile.
func ParseProfile(s string) (_ Profile, err error) {
	defer errmark.Boundary(&err)
	p := Profile(s)
	if !p.Valid() {
		return "", errors.WithStack(ErrUnknownProfile)
	}
	return p, nil
}

// Status is the state of a request as seen by the controller and as carried in
// a receipt or a status answer.
type Status string

// The five statuses.
const (
	StatusNotStarted Status = "not_started"
	StatusRunning    Status = "running"
	StatusSucceeded  Status = "succeeded"
	StatusFailed     Status = "failed"
	StatusUnknown    Status = "unknown"
)

// Valid reports whether s is one of the five statuses.
func (s Status) Valid() bool {
	switch s {
	case StatusNotStarted, StatusRunning, StatusSucceeded, StatusFailed, StatusUnknown:
		return true
	}
	return false
}

// Terminal reports whether s is a final state result: succeeded or failed.
// unknown is not terminal in this sense: later evidence may resolve it.
func (s Status) Terminal() bool { return s == StatusSucceeded || s == StatusFailed }
