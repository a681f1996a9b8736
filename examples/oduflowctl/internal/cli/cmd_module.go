package cli

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/oduflow/oduflow-go/receipt"
)

// ModuleFile is the name Salt loads the minion module under (oduflow_job.*).
const ModuleFile = "oduflow_job.py"

func cmdModule(e *env, args []string) error {
	fs := newFlagSet("module", "module [--install DIR]\n\n"+
		"Prints the minion module oduflow_job.py (protocol 1) embedded in this build, or writes it into DIR\n"+
		"with mode 0644, e.g. the master's file roots: --install /srv/salt/_modules, then\n"+
		"salt 'client-*' saltutil.sync_modules.", e.g, e.stderr)
	install := fs.String("install", "", "write "+ModuleFile+" into this directory (mode 0644) instead of printing it")
	if _, err := parseArgs(fs, args, 0, 0, "no arguments (use --install DIR)"); err != nil {
		return err
	}
	src := receipt.MinionModule().Source
	if *install == "" {
		_, err := e.stdout.Write(src)
		return err
	}
	st, err := os.Stat(*install)
	if err != nil || !st.IsDir() {
		return usagef("module: --install %q: not an existing directory", *install)
	}
	path := filepath.Join(*install, ModuleFile)
	if err := writeFile0644(path, src); err != nil {
		return failedf("module: %v", err)
	}
	sum := sha256.Sum256(src)
	p, err := e.printer()
	if err != nil {
		return err
	}
	out := struct {
		Path   string `json:"path"`
		Bytes  int    `json:"bytes"`
		SHA256 string `json:"sha256"`
	}{path, len(src), hex.EncodeToString(sum[:])}
	return p.value(out, func(w io.Writer) {
		fmt.Fprintf(w, "wrote %s (%d bytes, sha256 %s, mode 0644)\n", out.Path, out.Bytes, out.SHA256)
	})
}

// writeFile0644 replaces path atomically with data, mode 0644 whatever the umask.
func writeFile0644(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp) // no-op after the rename
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Chmod(0o644); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	if d, err := os.Open(filepath.Dir(path)); err == nil {
		_ = d.Sync()
		d.Close()
	}
	return nil
}
