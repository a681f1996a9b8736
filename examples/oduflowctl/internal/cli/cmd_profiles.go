package cli

import (
	"fmt"
	"io"
	"strings"
)

// cmdProfiles prints the profile table in effect (ODUFLOW_PROFILES, or the seeds' table), or the minion's
// side of it: the minion.d file that sets oduflow_profiles.
func cmdProfiles(e *env, args []string) error {
	fs := newFlagSet("profiles", "profiles [--minion-config]\n\n"+
		"Prints the profile table in effect (ODUFLOW_PROFILES; the seeds' four profiles when unset): its\n"+
		"digest, id policy and the states of each profile. --minion-config prints the minion's side instead:\n"+
		"a minion.d file (install it root-owned, mode 0644, e.g. /etc/salt/minion.d/oduflow_profiles.conf,\n"+
		"then restart the minion) whose oduflow_profiles the module reads; both digests must match.", e.g, e.stderr)
	minionConfig := fs.Bool("minion-config", false, "print the minion.d file of the table instead")
	if _, err := parseArgs(fs, args, 0, 0, "no arguments"); err != nil {
		return err
	}
	t, err := e.table()
	if err != nil {
		return err
	}
	if *minionConfig {
		_, err := e.stdout.Write(t.MinionConfig())
		return err
	}
	p, err := e.printer()
	if err != nil {
		return err
	}
	type profile struct {
		Name      string   `json:"name"`
		SLS       []string `json:"sls,omitempty"`
		Highstate bool     `json:"highstate,omitempty"`
	}
	out := struct {
		SHA256    string    `json:"sha256"`
		Default   bool      `json:"default"`
		MinionIDs string    `json:"minion_ids"`
		Profiles  []profile `json:"profiles"`
	}{SHA256: t.Digest(), Default: t.IsDefault(), MinionIDs: string(t.MinionIDs())}
	for _, name := range t.Profiles() {
		sls, hs, _ := t.States(name)
		out.Profiles = append(out.Profiles, profile{Name: string(name), SLS: sls, Highstate: hs})
	}
	return p.value(out, func(w io.Writer) {
		fmt.Fprintf(w, "profile table sha256 %s (minion_ids %s)\n", out.SHA256, out.MinionIDs)
		for _, pr := range out.Profiles {
			what := "state.apply " + strings.Join(pr.SLS, ",")
			if pr.Highstate {
				what = "state.apply (highstate)"
			}
			fmt.Fprintf(w, "  %-20s %s\n", pr.Name, what)
		}
	})
}
