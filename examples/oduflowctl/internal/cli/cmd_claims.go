package cli

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/oduflow/oduflow-go/oduflow/claims"
	"github.com/oduflow/oduflow-go/oduflow/filestore"
	"github.com/oduflow/oduflow-go/receipt"
)

func cmdClaims(e *env, args []string) error {
	usage := "claims migrate --from DIR --to etcd://HOST:PORT[,HOST:PORT...]/PREFIX"
	if len(args) == 0 {
		return usagef("claims: missing subcommand: want %s", usage)
	}
	switch args[0] {
	case "migrate":
		return cmdClaimsMigrate(e, args[1:])
	case "-h", "-help", "--help", "help":
		fmt.Fprintf(e.stderr, "Usage: oduflowctl %s\n\nClaim store operations. Each subcommand has --help.\n", usage)
		return flag.ErrHelp
	}
	return usagef("claims: unknown subcommand %q: want migrate", args[0])
}

// migrateReport is what claims migrate prints: how many claim files it read and what became of them.
type migrateReport struct {
	From       string `json:"from"`
	Read       int    `json:"read"`       // claim files read
	Copied     int    `json:"copied"`     // created in etcd
	Unresolved int    `json:"unresolved"` // of the copied, claims not final (running, unknown, quarantining)
	Present    int    `json:"present"`    // already in etcd with the same content
	Conflicts  int    `json:"conflicts"`  // already in etcd with other content: never overwritten
	InFlight   int    `json:"in_flight"`  // not final with a live worker in DIR: skipped
	Damaged    int    `json:"damaged"`    // unreadable claim files: skipped
}

func cmdClaimsMigrate(e *env, args []string) error {
	fs := newFlagSet("claims migrate", "claims migrate --from DIR --to etcd://HOST:PORT[,HOST:PORT...]/PREFIX\n\n"+
		"Copies every claim of a file claim store (final ones too: claims are never deleted) into an etcd\n"+
		"claim store, each with create-if-absent: a claim already in etcd is never overwritten (the same\n"+
		"content counts as present, other content as a conflict). Run it with the dispatchers stopped; a\n"+
		"claim whose worker still runs is skipped. Running it again is safe. Credentials and TLS files come\n"+
		"from ODUFLOW_ETCD_USER, ODUFLOW_ETCD_PASSWORD, ODUFLOW_ETCD_CACERT, ODUFLOW_ETCD_CERT and\n"+
		"ODUFLOW_ETCD_KEY. Copied claims start again at generation 1.\n\n"+
		"Exit status 0 when every claim is in etcd with its content, 1 on a conflict or a claim in flight,\n"+
		"6 when a claim file is damaged (the others are copied), 5 when a write's outcome is unknown (run\n"+
		"it again).", e.g, e.stderr)
	var from, to string
	fs.StringVar(&from, "from", "", "the file claim store directory")
	fs.StringVar(&to, "to", "", "the etcd claim store, etcd://HOST:PORT[,HOST:PORT...]/PREFIX")
	if _, err := parseArgs(fs, args, 0, 0, ""); err != nil {
		return err
	}
	if from == "" || to == "" {
		return usagef("claims migrate: want --from DIR and --to etcd://...")
	}
	if st, err := os.Stat(from); err != nil || !st.IsDir() {
		return usagef("claims migrate: --from %q is not a directory", from)
	}
	e.g.claims = to
	if !e.g.etcdClaims() {
		return usagef("claims migrate: --to must be etcd://HOST:PORT[,HOST:PORT...]/PREFIX")
	}
	p, err := e.printer()
	if err != nil {
		return err
	}
	src, err := filestore.OpenExisting(from)
	if err != nil {
		return configf(err, "claims migrate: claim store %q", from)
	}
	dst, err := e.openEtcd(e.ctx)
	if err != nil {
		return err
	}
	e.closers = append(e.closers, dst.Close)
	rep, err := migrate(e.ctx, src, dst, from)
	if err != nil {
		return err
	}
	if perr := p.value(rep, func(w io.Writer) {
		fmt.Fprintf(w, "read %d claims from %s: copied %d (%d unresolved), already present %d, conflicts %d, in flight %d, damaged %d\n",
			rep.Read, rep.From, rep.Copied, rep.Unresolved, rep.Present, rep.Conflicts, rep.InFlight, rep.Damaged)
	}); perr != nil {
		return perr
	}
	switch {
	case rep.Damaged > 0:
		return silentExit(ExitDamaged)
	case rep.Conflicts > 0 || rep.InFlight > 0:
		return silentExit(ExitFailed)
	}
	return nil
}

// migrate copies the claims of src into dst (create-if-absent). A write whose outcome is unknown stops it
// with that error (exit status 5): running it again finds the claim present or creates it.
func migrate(ctx context.Context, src *filestore.Store, dst claims.ClaimStore, from string) (migrateReport, error) {
	rep := migrateReport{From: from}
	entries, err := os.ReadDir(src.Dir())
	if err != nil {
		return rep, configf(err, "claims migrate: list %q", from)
	}
	for _, ent := range entries {
		req, ok := strings.CutSuffix(ent.Name(), ".json")
		if !ok || receipt.ValidateRequestID(req) != nil {
			continue // the index, lock files, temporary files (Get below refuses anything not a regular file)
		}
		rep.Read++
		c, err := src.Get(ctx, req)
		if err != nil {
			if errors.Is(err, claims.ErrNoClaim) {
				rep.Read--
				continue
			}
			rep.Damaged++
			continue
		}
		if !c.Phase.Final() {
			if held, err := src.RequestLockHeld(ctx, req); err != nil || held {
				rep.InFlight++
				continue
			}
		}
		switch err := dst.Create(ctx, c); {
		case err == nil:
			rep.Copied++
			if !c.Phase.Final() {
				rep.Unresolved++
			}
		case errors.Is(err, claims.ErrClaimExists):
			cur, gerr := dst.Get(ctx, req)
			if gerr != nil {
				return rep, gerr
			}
			if sameContent(cur, c) {
				rep.Present++
			} else {
				rep.Conflicts++
			}
		default:
			return rep, err
		}
	}
	return rep, nil
}

// sameContent compares two claims in their stored encoding, generation aside.
func sameContent(a, b *claims.Claim) bool {
	x, y := *a, *b
	x.Generation, y.Generation = 1, 1
	ea, err1 := x.MarshalBinary()
	eb, err2 := y.MarshalBinary()
	return err1 == nil && err2 == nil && bytes.Equal(ea, eb)
}
