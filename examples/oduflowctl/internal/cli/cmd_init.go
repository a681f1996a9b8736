package cli

import (
	"fmt"
	"io"

	"github.com/oduflow/oduflow-go/examples/internal/oduflowenv"
	"github.com/oduflow/oduflow-go/oduflow/catalog"
)

// initResult is what init prints: the directories it made sure of.
type initResult struct {
	ClaimDir   string `json:"claim_dir"`
	CatalogDir string `json:"catalog_dir,omitempty"`
}

// cmdInit creates the file claim store and the file catalog: the one command besides start and custom
// start that creates them, so that a deployment can make them before its first request and every other
// command can refuse a missing one (a mistyped path reads as an error, not as a store where every request
// is not_started).
func cmdInit(e *env, args []string) error {
	fs := newFlagSet("init", "init\n\n"+
		"Creates the claim store directory (--state-dir or --claims file:DIR, mode 0700) and the custom\n"+
		"catalog beside it (<state-dir>-catalog or ODUFLOW_CATALOG_DIR), or checks them when they exist.\n"+
		"start and custom start create them too; status, resume, reconcile and custom status never do: they\n"+
		"exit 6 on a missing store. With --claims etcd://... there is nothing to create.", e.g, e.stderr)
	if _, err := parseArgs(fs, args, 0, 0, ""); err != nil {
		return err
	}
	if e.g.etcdClaims() {
		return usagef("init: --claims names etcd: an etcd claim store needs no directory")
	}
	p, err := e.printer()
	if err != nil {
		return err
	}
	dir, err := e.g.claimDir()
	if err != nil {
		return err
	}
	if _, err := oduflowenv.OpenFileClaims(dir); err != nil {
		return fromEnv(err)
	}
	out := initResult{ClaimDir: dir}
	if !e.g.etcdCatalog() {
		out.CatalogDir = e.g.catalogDir()
		if _, err := catalog.Open(out.CatalogDir, catalog.WithCreate()); err != nil {
			return configf(err, "catalog %s", out.CatalogDir)
		}
	}
	return p.value(out, func(w io.Writer) {
		fmt.Fprintf(w, "claim store   %s\n", out.ClaimDir)
		if out.CatalogDir != "" {
			fmt.Fprintf(w, "catalog       %s\n", out.CatalogDir)
		}
	})
}
