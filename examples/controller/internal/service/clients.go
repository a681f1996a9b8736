package service

import (
	"context"
	"fmt"

	"github.com/oduflow/oduflow-go/profiles"
)

// clientBindings maps each managed client (minion id) to its company: the ODUFLOW_CLIENTS file, lines
// MINION COMPANY. The catalog records a company on assignments only (catalog.Assignment.Company), not on
// servers, so a fixed-profile client's company comes from here; an assignment is made with it too.
type clientBindings map[string]string

// loadClients reads the bindings file (not secret, but authority: not writable by others; at most
// MaxAuthFileBytes; readPrivateFile's checks). Each MINION must be an id of the profile table's policy
// (client-<uuid> under the seeds' table, any Salt minion id under minion_ids: salt).
func loadClients(ctx context.Context, env, path string, table *profiles.Table) (clientBindings, error) {
	out := clientBindings{}
	if path == "" {
		return out, nil
	}
	b, err := readPrivateFile(ctx, env, path, false)
	if err != nil {
		return nil, err
	}
	for _, l := range lines(b) {
		if len(l.fields) != 2 {
			return nil, lineError(env, l.n, fmt.Sprintf("%d fields: want MINION COMPANY", len(l.fields)))
		}
		if table.ValidateMinionID(l.fields[0]) != nil {
			if table.MinionIDs() == profiles.IDsSalt {
				return nil, lineError(env, l.n, "MINION: want a Salt minion id (1-128 of letters, digits, '.', '_', '-', "+
					"starting with a letter or digit, no \"..\", not ending in .lock)")
			}
			return nil, lineError(env, l.n, "MINION: want client-<canonical lowercase UUID>")
		}
		if !validCompany(l.fields[1]) {
			return nil, lineError(env, l.n, "COMPANY: want 1-128 letters, digits or . _ -")
		}
		if _, dup := out[l.fields[0]]; dup {
			return nil, lineError(env, l.n, "MINION already on an earlier line")
		}
		out[l.fields[0]] = l.fields[1]
	}
	return out, nil
}
