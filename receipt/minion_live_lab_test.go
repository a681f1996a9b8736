package receipt_test

// Lab helpers of TestMinionModuleLiveIntegration: env gating, the saltlab.sh
// invocation, and readers of the minion log, cache directory and receipt store.

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/oduflow/oduflow-go/receipt"
	"github.com/oduflow/oduflow-go/salt"
)

const defaultLiveReceiptDir = "/var/lib/oduflow/job-receipts"

type liveLab struct {
	master, events, keyFile, minion, modulesDir string
	labDir, receiptDir                          string
	kit                                         string // "" unless the disruptive steps are enabled
}

func readLiveLab(t *testing.T) liveLab {
	t.Helper()
	l := liveLab{
		master:     os.Getenv("ODUFLOW_SALT_MASTER"),
		events:     os.Getenv("ODUFLOW_SALT_EVENTS"),
		keyFile:    os.Getenv("ODUFLOW_SALT_KEY_FILE"),
		minion:     os.Getenv("ODUFLOW_SALT_MINION"),
		modulesDir: os.Getenv("ODUFLOW_SALT_MODULES_DIR"),
		labDir:     os.Getenv("ODUFLOW_SALTLAB_DIR"),
		receiptDir: os.Getenv("ODUFLOW_RECEIPT_DIR"),
	}
	var missing []string
	for _, kv := range [][2]string{{"ODUFLOW_SALT_MASTER", l.master}, {"ODUFLOW_SALT_EVENTS", l.events},
		{"ODUFLOW_SALT_KEY_FILE", l.keyFile}, {"ODUFLOW_SALT_MINION", l.minion},
		{"ODUFLOW_SALT_MODULES_DIR", l.modulesDir}} {
		if kv[1] == "" {
			missing = append(missing, kv[0])
		}
	}
	if len(missing) > 0 {
		t.Skipf("live minion-module checks against a real Salt master and minion skipped: set %s "+
			"(the lab's `saltlab.sh env` prints the ODUFLOW_SALT_* variables; ODUFLOW_SALT_MODULES_DIR is the "+
			"master's salt://_modules directory, e.g. <lab>/salt/_modules)", strings.Join(missing, ", "))
	}
	if l.labDir == "" {
		// <lab>/cache/master/.root_key
		master := filepath.Dir(l.keyFile)
		cache := filepath.Dir(master)
		if filepath.Base(master) != "master" || filepath.Base(cache) != "cache" {
			t.Skipf("live minion-module checks skipped: cannot derive the lab directory from %s; set ODUFLOW_SALTLAB_DIR", l.keyFile)
		}
		l.labDir = filepath.Dir(cache)
	}
	if l.receiptDir == "" {
		l.receiptDir = labReceiptDir(l.labDir)
	}
	if os.Getenv("ODUFLOW_LAB_DISRUPTIVE") == "1" {
		l.kit = os.Getenv("ODUFLOW_SALTLAB_SH")
	}
	return l
}

// labReceiptDir is the receipt store the lab's minion is configured with: the oduflow_receipt_dir key
// of <lab>/etc/minion or a <lab>/etc/minion.d/*.conf file (the release lab kit sets it to <lab>/receipts),
// else the module's default.
func labReceiptDir(labDir string) string {
	files, _ := filepath.Glob(filepath.Join(labDir, "etc", "minion.d", "*.conf"))
	dir := ""
	for _, f := range append([]string{filepath.Join(labDir, "etc", "minion")}, files...) {
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(data), "\n") {
			if v, ok := strings.CutPrefix(line, "oduflow_receipt_dir:"); ok && strings.TrimSpace(v) != "" {
				dir = strings.Trim(strings.TrimSpace(v), `"'`) // a later file overrides, as Salt reads them
			}
		}
	}
	if dir == "" {
		return defaultLiveReceiptDir
	}
	return dir
}

// disruptive skips t unless the restart/stop steps are enabled.
func (l liveLab) disruptive(t *testing.T) {
	t.Helper()
	if l.kit == "" {
		t.Skip("restarting lab daemons skipped: set ODUFLOW_LAB_DISRUPTIVE=1 and ODUFLOW_SALTLAB_SH=<path of saltlab.sh>")
	}
}

func (l liveLab) minionLog() string   { return filepath.Join(l.labDir, "logs", "minion.log") }
func (l liveLab) minionCache() string { return filepath.Join(l.labDir, "cache", "minion") }
func (l liveLab) stackMarker() string { return filepath.Join(l.labDir, "out", "client_stack.txt") }

func (r *liveRunner) kit(args ...string) {
	r.t.Helper()
	start := time.Now()
	out, err := exec.CommandContext(r.ctx, "bash", append([]string{r.lab.kit}, args...)...).CombinedOutput()
	r.t.Logf("  $ bash saltlab.sh %s  (%s)\n%s", strings.Join(args, " "), time.Since(start).Round(time.Millisecond),
		indent(strings.TrimRight(string(out), "\n")))
	if err != nil {
		r.t.Fatalf("saltlab.sh %s: %v", strings.Join(args, " "), err)
	}
}

func indent(s string) string { return "      " + strings.ReplaceAll(s, "\n", "\n      ") }

// jobTrace is what the minion log says about one JID after a log offset.
type jobTrace struct {
	starts    int      // "Starting a new job <jid> with PID <pid>"
	pids      []string // the job processes
	executing []string // "Executing state ..." lines of those processes
	lines     []string // every line of those processes
}

var (
	logLineRE  = regexp.MustCompile(`\]\[(\d+)\] (.*)$`)
	jobStartRE = regexp.MustCompile(`^Starting a new job (\d{20}) with PID (\d+)$`)
)

func logSize(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatalf("minion log: %v", err)
	}
	return fi.Size()
}

func readLogFrom(t *testing.T, path string, off int64) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("minion log: %v", err)
	}
	defer f.Close()
	if _, err := f.Seek(off, io.SeekStart); err != nil {
		t.Fatalf("minion log: %v", err)
	}
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<16), 1<<22)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("minion log: %v", err)
	}
	return lines
}

func traceJob(t *testing.T, path string, off int64, jid salt.JID) jobTrace {
	t.Helper()
	lines := readLogFrom(t, path, off)
	var tr jobTrace
	for _, l := range lines {
		m := logLineRE.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		if s := jobStartRE.FindStringSubmatch(m[2]); s != nil && s[1] == string(jid) {
			tr.starts++
			tr.pids = append(tr.pids, s[2])
		}
	}
	for _, l := range lines {
		m := logLineRE.FindStringSubmatch(l)
		if m == nil || !slices.Contains(tr.pids, m[1]) {
			continue
		}
		tr.lines = append(tr.lines, m[2])
		if strings.HasPrefix(m[2], "Executing state ") {
			tr.executing = append(tr.executing, m[2])
		}
	}
	return tr
}

// fileState is the identity of one store file: bytes, inode, mtime.
type fileState struct {
	data  []byte
	ino   uint64
	mtime time.Time
}

func statFile(t *testing.T, path string) fileState {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatalf("stat %s: %v", path, err)
	}
	st, _ := fi.Sys().(*syscall.Stat_t)
	var ino uint64
	if st != nil {
		ino = st.Ino
	}
	return fileState{data: data, ino: ino, mtime: fi.ModTime()}
}

func (a fileState) same(b fileState) bool {
	return bytes.Equal(a.data, b.data) && a.ino == b.ino && a.mtime.Equal(b.mtime)
}

func storeCounts(t *testing.T, dir string) string {
	t.Helper()
	jids, err1 := filepath.Glob(filepath.Join(dir, "jid-*.json"))
	reqs, err2 := filepath.Glob(filepath.Join(dir, "req-*.json"))
	if err1 != nil || err2 != nil {
		t.Fatalf("glob %s: %v %v", dir, err1, err2)
	}
	return fmt.Sprintf("%d jid index files, %d request records", len(jids), len(reqs))
}

// storedReceipt decodes the minion's committed request record.
func storedReceipt(t *testing.T, dir, requestID string) (receipt.Receipt, fileState) {
	t.Helper()
	fs := statFile(t, filepath.Join(dir, "req-"+requestID+".json"))
	r, err := receipt.Decode(fs.data)
	if err != nil {
		t.Fatalf("stored record of %s is not a terminal receipt: %v (%s)", requestID, err, fs.data)
	}
	return r, fs
}

func exists(t *testing.T, path string) bool {
	t.Helper()
	_, err := os.Lstat(path)
	if err == nil {
		return true
	}
	if !os.IsNotExist(err) {
		t.Fatalf("stat %s: %v", path, err)
	}
	return false
}

func removeIfExists(t *testing.T, path string) string {
	t.Helper()
	fi, err := os.Lstat(path)
	if os.IsNotExist(err) {
		return "absent"
	}
	if err != nil {
		t.Fatalf("stat %s: %v", path, err)
	}
	if err := os.Remove(path); err != nil {
		t.Fatalf("remove %s: %v", path, err)
	}
	return "removed (mtime " + fi.ModTime().UTC().Format(time.RFC3339Nano) + ")"
}

var rawCacheNames = []string{"sls.p", "highstate.cache.p"}

// rawCacheFiles lists the raw state caches present in the minion's cache dir:
// sls.p, highstate.cache.p and any other *.p file at its top level.
func rawCacheFiles(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatalf("read %s: %v", dir, err)
	}
	var out []string
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".p") {
			fi, err := e.Info()
			if err != nil {
				t.Fatalf("stat %s: %v", e.Name(), err)
			}
			out = append(out, fmt.Sprintf("%s (%d bytes, mtime %s)", e.Name(), fi.Size(), fi.ModTime().UTC().Format("15:04:05.000")))
		}
	}
	return out
}

func writeModule(t *testing.T, dir string, data []byte) string {
	t.Helper()
	dst := filepath.Join(dir, receipt.MinionModule().Name)
	if old, err := os.ReadFile(dst); err == nil && bytes.Equal(old, data) {
		return "already identical"
	}
	tmp, err := os.CreateTemp(dir, ".oduflow_job-*.tmp")
	if err != nil {
		t.Fatalf("module: %v", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		t.Fatalf("module: %v", err)
	}
	if err := tmp.Chmod(0o644); err != nil {
		t.Fatalf("module: %v", err)
	}
	if err := tmp.Sync(); err != nil {
		t.Fatalf("module: %v", err)
	}
	if err := tmp.Close(); err != nil {
		t.Fatalf("module: %v", err)
	}
	if err := os.Rename(tmp.Name(), dst); err != nil {
		t.Fatalf("module: %v", err)
	}
	return "written"
}

// waitJobLog polls the minion log (every poll) for a line of jid's job
// process accepted by match.
func waitJobLog(t *testing.T, path string, off int64, jid salt.JID, d, poll time.Duration, match func(string) bool) (string, bool) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("minion log: %v", err)
	}
	defer f.Close()
	if _, err := f.Seek(off, io.SeekStart); err != nil {
		t.Fatalf("minion log: %v", err)
	}
	var pending []byte
	var pids []string
	buf := make([]byte, 1<<16)
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		n, err := f.Read(buf)
		pending = append(pending, buf[:n]...)
		for {
			i := bytes.IndexByte(pending, '\n')
			if i < 0 {
				break
			}
			l := string(pending[:i])
			pending = pending[i+1:]
			m := logLineRE.FindStringSubmatch(l)
			if m == nil {
				continue
			}
			if s := jobStartRE.FindStringSubmatch(m[2]); s != nil && s[1] == string(jid) {
				pids = append(pids, s[2])
			}
			// The job's own processes, or a line that names the JID (Salt 3007 and later send a job's
			// return from the minion's main process).
			if (slices.Contains(pids, m[1]) || strings.Contains(m[2], string(jid))) && match(m[2]) {
				return l, true
			}
		}
		if n == 0 || err != nil {
			// a poll of the live minion's log file: the lab announces nothing (live test only)
			time.Sleep(poll)
		}
	}
	return "", false
}

// TestReadLiveLabReceiptDir: a lab whose minion config sets oduflow_receipt_dir (the release lab kit
// writes <lab>/receipts into <lab>/etc/minion) is read there, a minion.d file overriding it; without the
// key the module's default stays. Before, the live test always read the default and failed on such a lab
// right after its first run ("req-<id>.json: no such file or directory").
func TestReadLiveLabReceiptDir(t *testing.T) {
	lab := t.TempDir()
	if err := os.MkdirAll(filepath.Join(lab, "etc", "minion.d"), 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(name, body string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(lab, "etc", name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for k, v := range map[string]string{"ODUFLOW_SALT_MASTER": "tcp://127.0.0.1:1", "ODUFLOW_SALT_EVENTS": "unix:///nonexistent",
		"ODUFLOW_SALT_KEY_FILE": filepath.Join(lab, "cache", "master", ".root_key"), "ODUFLOW_SALT_MINION": "web01.lab.example",
		"ODUFLOW_SALT_MODULES_DIR": filepath.Join(lab, "salt", "_modules"), "ODUFLOW_SALTLAB_DIR": lab, "ODUFLOW_RECEIPT_DIR": ""} {
		t.Setenv(k, v)
	}
	if got := readLiveLab(t).receiptDir; got != defaultLiveReceiptDir {
		t.Fatalf("no key: %q, want the default", got)
	}
	write("minion", "master: 127.0.0.1\noduflow_receipt_dir: "+lab+"/receipts\n")
	if got := readLiveLab(t).receiptDir; got != lab+"/receipts" {
		t.Fatalf("etc/minion: %q", got)
	}
	write("minion.d/zz.conf", "oduflow_receipt_dir: '/srv/other/receipts'\n")
	if got := readLiveLab(t).receiptDir; got != "/srv/other/receipts" {
		t.Fatalf("minion.d override: %q", got)
	}
}
