package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/oduflow/oduflow-go/oduflow"
	"github.com/oduflow/oduflow-go/oduflow/catalog"
)

// cliCompany is the company (tenant) the CLI files its definitions under.
const cliCompany = "oduflowctl"

// catalogDir is where the file catalog keeps custom definitions, assignments and execution snapshots:
// beside the claim store, "<state-dir>-catalog", unless ODUFLOW_CATALOG_DIR says otherwise.
func (g *globals) catalogDir() string {
	if g.catalog != "" {
		return g.catalog
	}
	dir := g.stateDir
	if d, err := g.claimDir(); err == nil {
		dir = d
	}
	return filepath.Clean(dir) + "-catalog"
}

// etcdCatalog reports whether the catalog lives in etcd next to the claims: --claims names etcd and
// ODUFLOW_CATALOG_DIR is unset. An explicit ODUFLOW_CATALOG_DIR keeps the file catalog (one host's
// definitions, e.g. while moving to etcd); then only that host's replicas share the per-server lock.
func (g *globals) etcdCatalog() bool { return g.etcdClaims() && g.catalog == "" }

// openCatalog opens the custom catalog: in etcd (the same Store as the claims, see etcdCatalog) or in
// catalogDir. A catalog that cannot be opened is an exitError with its status (2 for a directory,
// 3 or 4 for an etcd that does not answer or refuses).
func (e *env) openCatalog() (catalog.Store, error) {
	if e.g.etcdCatalog() {
		st, err := e.etcdStore(e.ctx)
		if err != nil {
			return nil, err
		}
		return st.Catalog()
	}
	var opts []catalog.Option
	if e.createStore {
		opts = append(opts, catalog.WithCreate())
	} else if _, err := os.Lstat(e.g.catalogDir()); errors.Is(err, fs.ErrNotExist) {
		return nil, &exitError{code: ExitDamaged, msg: fmt.Sprintf("damaged or missing claim store: catalog %s does not exist "+
			"(check --state-dir or ODUFLOW_CATALOG_DIR; custom start or init creates it)", e.g.catalogDir())}
	}
	cat, err := catalog.Open(e.g.catalogDir(), opts...)
	if err != nil {
		return nil, configf(err, "catalog %s", e.g.catalogDir())
	}
	return cat, nil
}

// definitionFor files FILE's source as the definition named by its absolute path and assigns it to
// the minion. The catalog's atomic get-or-create makes it one definition per path, however many
// `custom start` run at once (from any number of processes); changed source becomes a new revision.
func (e *env) definitionFor(ctx context.Context, cat catalog.Store, path, minion string, src []byte) (catalog.Definition, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return catalog.Definition{}, err
	}
	def, created, err := cat.GetOrCreateDefinition(ctx, cliCompany, abs, src)
	if err != nil {
		return catalog.Definition{}, err
	}
	if !created {
		e.warnDuplicates(ctx, cat, abs, def.ID)
		if def, err = cat.SaveSource(ctx, def.ID, src); err != nil {
			return catalog.Definition{}, err
		}
	}
	if _, err := cat.Assign(ctx, def.ID, minion, cliCompany); err != nil {
		return catalog.Definition{}, err
	}
	return def, nil
}

// warnDuplicates says (stderr, one line) when the file catalog holds several definitions of this path,
// written before the catalog enforced one per name, and which one is used. The etcd catalog has
// always enforced it.
func (e *env) warnDuplicates(ctx context.Context, cat catalog.Store, name, used string) {
	fc, ok := cat.(*catalog.FileStore)
	if !ok {
		return
	}
	ids, _, err := fc.Duplicates(ctx, cliCompany, name)
	if err != nil || len(ids) < 2 {
		return
	}
	fmt.Fprintf(e.stderr, "oduflowctl custom start: warning: the catalog holds %d definitions of %s (%s); using %s\n",
		len(ids), name, strings.Join(ids, ", "), used)
}

func (p *printer) custom(r oduflow.CustomResponse) error {
	return p.value(r, func(w io.Writer) {
		fmt.Fprintf(w, "status        %s\npassed        %d of %d\nminion_id     %s\nrequest_id    %s\nexecution_id  %s\njid           %s\n",
			r.Status, r.Passed, r.Total, r.MinionID, r.RequestID, r.ExecutionID, jidText(r.JID))
		if r.ErrorCode != "" {
			fmt.Fprintf(w, "error_code    %s\n", r.ErrorCode)
		}
		if r.Reused != "" {
			fmt.Fprintf(w, "reused        %s\n", r.Reused)
		}
	})
}

func cmdCustomStart(e *env, args []string) error {
	fs := newFlagSet("custom start", "custom start MINION FILE [REQUEST_ID] [--again] [--wait]\n\n"+
		"Applies the custom state in FILE to the minion: the source is validated, filed as a revisioned\n"+
		"definition (named by the file's path) assigned to the minion, frozen into an execution snapshot with\n"+
		"its digest, and run once by a detached worker through oduflow_job.run (state.high of exactly that\n"+
		"payload). Repeating with the same REQUEST_ID never publishes again; applying an identical digest that\n"+
		"already succeeded reuses that result unless --again. The server needs a succeeded configure first.\n"+
		"Definitions live in <state-dir>-catalog (or ODUFLOW_CATALOG_DIR); with --claims etcd://... in etcd next\n"+
		"to the claims (unless ODUFLOW_CATALOG_DIR is set), so that replicas on several hosts apply once.", e.g, e.stderr)
	again := fs.Bool("again", false, "apply again: an explicit new execution after a known terminal result")
	var w waitFlags
	w.register(fs)
	pos, err := parseArgs(fs, args, 2, 3, "MINION FILE [REQUEST_ID]")
	if err != nil {
		return err
	}
	minion, file, request := pos[0], pos[1], requestArg(pos, 2)
	if err := firstErr(e.checkMinion("custom start", minion), checkRequest("custom start", request), w.check("custom start")); err != nil {
		return err
	}
	src, err := readSource("custom start", file)
	if err != nil {
		return err
	}
	if err := e.validateSource("custom start", file, src); err != nil {
		return err
	}
	if err := e.g.needMaster("custom start", true); err != nil {
		return err
	}
	e.createStore = true
	p, cat, d, err := e.customSession("custom start")
	if err != nil {
		return err
	}
	if err := e.probeUnlessClaimed(d, "custom start", minion, request); err != nil {
		return err
	}
	def, err := e.definitionFor(e.ctx, cat, file, minion, src)
	if err != nil {
		return err
	}
	mode := catalog.ModeApply
	if *again {
		mode = catalog.ModeApplyAgain
	}
	r, err := d.CustomStart(e.ctx, minion, request, def.ID, mode)
	if err != nil {
		return customRefusal(err)
	}
	if w.wait {
		r, err = e.waitCustom(d, r, w)
	}
	return p.finishCustom(r, err)
}

// customSession returns the printer, the catalog and a dispatcher over it of a custom command.
func (e *env) customSession(cmd string) (*printer, catalog.Store, *oduflow.Dispatcher, error) {
	p, err := e.printer()
	if err != nil {
		return nil, nil, nil, err
	}
	cat, err := e.openCatalog()
	if err != nil {
		var ee *exitError
		if errors.As(err, &ee) {
			ee.msg = cmd + ": " + ee.msg
		}
		return nil, nil, nil, err
	}
	d, err := e.dispatcher(e.ctx, oduflow.WithCustomCatalog(cat))
	if err != nil {
		return nil, nil, nil, err
	}
	return p, cat, d, nil
}

func (e *env) validateSource(cmd, file string, src []byte) error {
	if _, err := catalog.Compile(src); err != nil {
		return e.customInvalid(cmd, file, err)
	}
	return nil
}

// customRefusal names the custom refusals in one line (exit status 1: the input was fine,
// the server's state forbids the execution).
func customRefusal(err error) error {
	switch {
	case errors.Is(err, oduflow.ErrInitialConfigurationMissing):
		return failedf("custom start: refused: the server has no succeeded configure yet (oduflowctl start configure ...)")
	case errors.Is(err, oduflow.ErrUncertain):
		return &exitError{code: ExitUnknown, msg: fmt.Sprintf("custom start: refused: %v (oduflowctl reconcile ...)", oneLine(err.Error()))}
	case errors.Is(err, oduflow.ErrNeedsConfirmation):
		return failedf("custom start: refused: %v (oduflowctl reconcile --from-minion ...)", oneLine(err.Error()))
	case errors.Is(err, oduflow.ErrApplyAgainWithoutTerminal):
		return failedf("custom start: refused: --again needs a known terminal result of this state on the server")
	}
	return err
}

func (e *env) waitCustom(d *oduflow.Dispatcher, first oduflow.CustomResponse, w waitFlags) (oduflow.CustomResponse, error) {
	last := first
	_, err := w.follow(e, asResponse(first), func(ctx context.Context) (oduflow.Response, error) {
		r, err := d.CustomStatus(ctx, first.MinionID, first.RequestID)
		if err == nil {
			last = r
		}
		return asResponse(r), err
	})
	return last, err
}

func asResponse(r oduflow.CustomResponse) oduflow.Response {
	return oduflow.Response{MinionID: r.MinionID, RequestID: r.RequestID, JID: r.JID, Status: r.Status,
		Passed: r.Passed, Total: r.Total, ErrorCode: r.ErrorCode}
}

func cmdCustomStatus(e *env, args []string) error {
	fs := newFlagSet("custom status", "custom status MINION REQUEST_ID [--wait]\n\n"+
		"Prints a custom request's status: target, request, the execution it resolved to, job identity, status\n"+
		"and counts; nothing else (no source, no payload, no Salt output).", e.g, e.stderr)
	minion, request, w, err := e.parseMinionRequest(fs, args)
	if err != nil {
		return err
	}
	p, _, d, err := e.customSession("custom status")
	if err != nil {
		return err
	}
	r, err := d.CustomStatus(e.ctx, minion, request)
	if err != nil {
		return err
	}
	if w.wait {
		r, err = e.waitCustom(d, r, w)
	}
	return p.finishCustom(r, err)
}
