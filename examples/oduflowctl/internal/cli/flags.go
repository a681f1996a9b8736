package cli

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/oduflow/oduflow-go/examples/internal/oduflowenv"
)

// DefaultStateDir is the default claim store directory (see the oduflow package doc).
const DefaultStateDir = oduflowenv.DefaultStateDir

// DefaultPKIDir is the Salt master's PKI directory.
const DefaultPKIDir = oduflowenv.DefaultPKIDir

// globals are the flags every command accepts, each defaulting to an environment variable.
type globals struct {
	master, events, keyFile, eauth, user, stateDir, output string
	pkiDir                                                 string       // --pki-dir, ODUFLOW_SALT_PKI_DIR
	claims                                                 string       // --claims, ODUFLOW_CLAIMS: file:DIR, DIR or etcd://…
	etcd                                                   etcdSettings // ODUFLOW_ETCD_* only, never flags
	catalog                                                string       // ODUFLOW_CATALOG_DIR only
	profiles                                               string       // ODUFLOW_PROFILES only
	password                                               string       // ODUFLOW_SALT_PASSWORD only, never a flag
}

func globalsFromEnv(getenv func(string) string) *globals {
	s := oduflowenv.FromEnv(getenv) // the variables the controller reads too, defaults filled in
	return &globals{
		master:   s.Master,
		events:   s.Events,
		keyFile:  s.KeyFile,
		eauth:    s.Eauth,
		user:     s.User,
		password: s.Password,
		stateDir: s.StateDir,
		output:   getenv("ODUFLOW_OUTPUT"),
		catalog:  s.CatalogDir,
		profiles: s.Profiles,
		pkiDir:   s.PKIDir,
		claims:   s.Claims,
		etcd:     etcdFromEnv(getenv),
	}
}

// settings are the effective connection settings (the environment, then the flags).
func (g *globals) settings() oduflowenv.Settings {
	return oduflowenv.Settings{Master: g.master, Events: g.events, KeyFile: g.keyFile, Eauth: g.eauth, User: g.user,
		Password: g.password, StateDir: g.stateDir, PKIDir: g.pkiDir, Claims: g.claims, CatalogDir: g.catalog, Profiles: g.profiles,
		Etcd: oduflowenv.Etcd{User: g.etcd.user, Password: g.etcd.password, CACert: g.etcd.caCert, Cert: g.etcd.cert,
			Key: g.etcd.key}}
}

// register adds the global flags to fs, with the current values as defaults, so that they
// are accepted before and after the command name.
func (g *globals) register(fs *flag.FlagSet) {
	fs.StringVar(&g.master, "master", g.master, "master request port, e.g. tcp://127.0.0.1:4506 (env ODUFLOW_SALT_MASTER)")
	fs.StringVar(&g.events, "events", g.events, "master event bus, unix:///…/master_event_pub.ipc or tcp://127.0.0.1:4512 (env ODUFLOW_SALT_EVENTS)")
	fs.StringVar(&g.keyFile, "key-file", g.keyFile, "master user key file, e.g. /var/cache/salt/master/.root_key (env ODUFLOW_SALT_KEY_FILE)")
	fs.StringVar(&g.eauth, "eauth", g.eauth, "eauth backend, e.g. pam or file (env ODUFLOW_SALT_EAUTH; password only from ODUFLOW_SALT_PASSWORD)")
	fs.StringVar(&g.user, "user", g.user, "eauth user (env ODUFLOW_SALT_USER)")
	fs.StringVar(&g.stateDir, "state-dir", g.stateDir, "claim store directory, mode 0700 (env ODUFLOW_STATE_DIR)")
	fs.StringVar(&g.claims, "claims", g.claims, "claim store: file:DIR, DIR (default: --state-dir) or etcd://HOST:PORT[,HOST:PORT...]/PREFIX (etcds:// for TLS; credentials in ODUFLOW_ETCD_USER, ODUFLOW_ETCD_PASSWORD, TLS files in ODUFLOW_ETCD_CACERT, ODUFLOW_ETCD_CERT, ODUFLOW_ETCD_KEY) (env ODUFLOW_CLAIMS)")
	fs.StringVar(&g.pkiDir, "pki-dir", g.pkiDir, "the master's pki_dir; minions/<id> are the accepted keys receipt proofs verify against (env ODUFLOW_SALT_PKI_DIR)")
	fs.StringVar(&g.output, "output", g.output, "json or text; default text on a terminal, json otherwise (env ODUFLOW_OUTPUT)")
}

// newFlagSet returns a FlagSet for one command whose usage names it, lists its own flags and
// then the global ones.
func newFlagSet(name, usage string, g *globals, w io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(w)
	fs.Usage = func() {
		fmt.Fprintf(w, "Usage: oduflowctl %s\n", usage)
		local := flag.NewFlagSet(name, flag.ContinueOnError)
		fs.VisitAll(func(f *flag.Flag) {
			if !isGlobalFlag(f.Name) {
				local.Var(f.Value, f.Name, f.Usage)
			}
		})
		local.SetOutput(w)
		if hasFlags(local) {
			fmt.Fprintln(w, "\nFlags:")
			local.PrintDefaults()
		}
		fmt.Fprintln(w, "\nGlobal flags (also accepted before the command): --master --events --key-file --eauth --user --state-dir --claims --pki-dir --output; see oduflowctl --help")
	}
	g.register(fs)
	return fs
}

func hasFlags(fs *flag.FlagSet) bool {
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	return n > 0
}

func isGlobalFlag(name string) bool {
	switch name {
	case "master", "events", "key-file", "eauth", "user", "state-dir", "claims", "pki-dir", "output":
		return true
	}
	return false
}

// parse parses flags anywhere among the arguments (the standard package stops at the first
// positional one) and returns the positional arguments. "--" ends flag parsing.
func parse(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		// fs.Parse consumed a "--" if it stopped there: everything after it is positional.
		if consumedDashDash(args, rest) {
			return append(pos, rest...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

func consumedDashDash(args, rest []string) bool {
	i := len(args) - len(rest) - 1
	return i >= 0 && args[i] == "--"
}

// positional checks the number of positional arguments.
func positional(cmd string, pos []string, min, max int, names string) error {
	if len(pos) < min {
		return usagef("%s: missing argument: want %s", cmd, names)
	}
	if len(pos) > max {
		return usagef("%s: unexpected argument %q: want %s", cmd, pos[max], names)
	}
	return nil
}

// stdoutIsTerminal reports whether w is a terminal (character device).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

func (g *globals) outputMode(stdout io.Writer) (string, error) {
	switch strings.ToLower(g.output) {
	case "":
		if isTerminal(stdout) {
			return "text", nil
		}
		return "json", nil
	case "json":
		return "json", nil
	case "text":
		return "text", nil
	}
	return "", usagef("--output: %q is not json or text", g.output)
}

// parseArgs parses a command's arguments with fs (see parseFlags) and checks that there are
// min to max positional ones (see positional); the command is named by fs.
func parseArgs(fs *flag.FlagSet, args []string, min, max int, names string) ([]string, error) {
	pos, err := parseFlags(fs, args)
	if err != nil {
		return nil, err
	}
	if err := positional(fs.Name(), pos, min, max, names); err != nil {
		return nil, err
	}
	return pos, nil
}

// claimDir is the claim store directory: --claims (file:DIR or a plain DIR) when given, else --state-dir.
// It must be named and, when it exists, be a directory (exit status 2 otherwise).
func (g *globals) claimDir() (string, error) {
	dir, err := g.settings().ClaimDir()
	return dir, fromEnv(err)
}
