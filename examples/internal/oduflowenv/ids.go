package oduflowenv

import (
	"context"
	"strings"

	"github.com/oduflow/oduflow-go/profiles"
	"github.com/oduflow/oduflow-go/receipt"
)

// CheckMinion checks a minion id against the id policy (receipt.ValidateMinionID: any Salt minion id
// that names exactly one minion and is one safe path component), ErrUsage otherwise. The profile
// table's own policy (minion_ids) is CheckMinionIn's, and the dispatcher's.
func CheckMinion(cmd, s string) error {
	if err := receipt.ValidateMinionID(s); err != nil {
		return usagef("%s: invalid minion id %q: want a Salt minion id (1-128 of letters, digits, '.', '_', '-', "+
			"starting with a letter or digit, no \"..\", not ending in .lock)", cmd, s)
	}
	return nil
}

// CheckMinionIn checks a minion id against the table's id policy: client-<canonical lowercase UUID>
// (minion_ids seeds, the default) or any Salt minion id (minion_ids salt). ErrUsage otherwise, naming
// the form.
func CheckMinionIn(cmd, s string, t *profiles.Table) error {
	if t.ValidateMinionID(s) == nil {
		return nil
	}
	if t.MinionIDs() == profiles.IDsSalt {
		return CheckMinion(cmd, s)
	}
	return usagef("%s: invalid minion id %q: want client-<canonical lowercase UUID> "+
		"(or minion_ids: salt in the ODUFLOW_PROFILES table)", cmd, s)
}

// CheckRequest checks a request id: a canonical lowercase UUID (ErrUsage otherwise, naming the form).
func CheckRequest(cmd, s string) error {
	if err := receipt.ValidateRequestID(s); err != nil {
		return usagef("%s: invalid request id %q: want a canonical lowercase UUID", cmd, s)
	}
	return nil
}

// FixedProfile parses a profile name that is not custom (custom states have their own entry points):
// one of a profile table's names ([a-z][a-z0-9_]{0,31}); which of them the dispatcher runs is its
// table's business (ProfileIn checks it here).
func FixedProfile(cmd, s string) (receipt.Profile, error) {
	p := receipt.Profile(s)
	if p == receipt.ProfileCustom {
		return "", usagef("%s: profile custom: use oduflowctl custom start/status", cmd)
	}
	if !p.ValidName() {
		return "", usagef("%s: unknown profile %q: want configure, production, volume_resize or credentials, "+
			"or a profile of the ODUFLOW_PROFILES table", cmd, s)
	}
	return p, nil
}

// ProfileIn parses a profile of the table (not custom), ErrUsage otherwise, naming the table's profiles
// (the seeds' table: the message of the four fixed profiles, as before tables).
func ProfileIn(cmd, s string, t *profiles.Table) (receipt.Profile, error) {
	p := receipt.Profile(s)
	if p == receipt.ProfileCustom {
		return "", usagef("%s: profile custom: use oduflowctl custom start/status", cmd)
	}
	if p.ValidName() && t.Has(p) {
		return p, nil
	}
	if t.IsDefault() {
		return "", usagef("%s: unknown profile %q: want configure, production, volume_resize or credentials", cmd, s)
	}
	names := make([]string, 0, len(t.Profiles()))
	for _, q := range t.Profiles() {
		names = append(names, string(q))
	}
	return "", usagef("%s: unknown profile %q: want one of %s", cmd, s, strings.Join(names, ", "))
}

// Table loads the profile table named by ODUFLOW_PROFILES (Settings.Profiles); the seeds' table
// (profiles.DefaultTable) when it is unset. A table that does not load is ErrUsage naming the variable,
// the file, the line and the field: nothing starts with it.
func (s Settings) Table(ctx context.Context) (*profiles.Table, error) {
	if s.Profiles == "" {
		return profiles.DefaultTable(), nil
	}
	t, err := profiles.LoadTable(ctx, s.Profiles)
	if err != nil {
		return nil, configf(err, "ODUFLOW_PROFILES")
	}
	return t, nil
}
