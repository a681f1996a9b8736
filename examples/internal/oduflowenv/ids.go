package oduflowenv

import "github.com/oduflow/oduflow-go/receipt"

// CheckMinion checks a minion id: client-<canonical lowercase UUID> (ErrUsage otherwise, naming the form).
func CheckMinion(cmd, s string) error {
	if err := receipt.ValidateMinionID(s); err != nil {
		return usagef("%s: invalid minion id %q: want client-<canonical lowercase UUID>", cmd, s)
	}
	return nil
}

// CheckRequest checks a request id: a canonical lowercase UUID (ErrUsage otherwise, naming the form).
func CheckRequest(cmd, s string) error {
	if err := receipt.ValidateRequestID(s); err != nil {
		return usagef("%s: invalid request id %q: want a canonical lowercase UUID", cmd, s)
	}
	return nil
}

// FixedProfile parses a fixed profile: configure, production, volume_resize or credentials (custom
// states have their own entry points).
func FixedProfile(cmd, s string) (receipt.Profile, error) {
	p, err := receipt.ParseProfile(s)
	if err != nil {
		return "", usagef("%s: unknown profile %q: want configure, production, volume_resize or credentials", cmd, s)
	}
	if p == receipt.ProfileCustom {
		return "", usagef("%s: profile custom: use oduflowctl custom start/status", cmd)
	}
	return p, nil
}
