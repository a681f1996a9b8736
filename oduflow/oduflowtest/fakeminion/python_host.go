package fakeminion

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/oduflow/oduflow-go/internal/errmark"

	"github.com/cockroachdb/errors"

	"github.com/oduflow/oduflow-go/receipt"
)

// Sentinel errors.
var (
	// errHostClosed: the host was closed.
	errHostClosed = errors.New("fakeminion: host closed")
	// errHostExited: the Python process exited.
	errHostExited = errors.New("fakeminion: host process exited")
	// ErrPythonMissing: the interpreter was not found.
	ErrPythonMissing = errors.New("fakeminion: python interpreter not found")
)

// PythonHost is a running Python host serving the real module for any number of minion ids. It is safe
// for concurrent use.
type PythonHost struct {
	dir    string
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	logger *slog.Logger

	writeMu sync.Mutex
	mu      sync.Mutex
	pending map[string]chan response
	closed  bool
	nextID  atomic.Uint64
	done    chan struct{} // closed when the reader ends (process exited or stdout closed)
	waitErr error
}

type response struct {
	ID      json.RawMessage `json:"id"`
	Return  json.RawMessage `json:"return"`
	Retcode int             `json:"retcode"`
}

type request struct {
	ID       string         `json:"id"`
	MinionID string         `json:"minion_id"`
	Fun      string         `json:"fun"`
	Args     []any          `json:"args"`
	Kwargs   map[string]any `json:"kwargs"`
	JID      string         `json:"jid"`
}

// StartPython writes the embedded module and host into dir (created 0700 when missing) and starts
// the host. It returns after a ping round trip, or with ctx's error.
func StartPython(ctx context.Context, dir string, opts ...PythonOption) (*PythonHost, error) {
	cfg := config{python: defaultPython()}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.logger == nil {
		cfg.logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	python, err := exec.LookPath(cfg.python)
	if err != nil {
		return nil, errmark.Mark(errors.Wrap(err, "fakeminion: look up python"), ErrPythonMissing)
	}
	dir, err = filepath.Abs(dir)
	if err != nil {
		return nil, errors.Wrap(err, "fakeminion: directory")
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, errors.Wrap(err, "fakeminion: create directory")
	}
	files := map[string][]byte{
		receipt.MinionModuleName: receipt.MinionModule(),
		"host.py":                receipt.MinionTestHost(),
	}
	hostCfg, err := json.Marshal(cfg.host.wire())
	if err != nil {
		return nil, errors.Wrap(err, "fakeminion: encode config")
	}
	files["host-config.json"] = hostCfg
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			return nil, errors.Wrapf(err, "fakeminion: write %s", errors.Safe(name))
		}
	}
	// The host process must outlive ctx (it serves until Close), so ctx only bounds startup.
	cmd := exec.Command(python, "-B", filepath.Join(dir, "host.py"), //nolint:gosec // fixed args
		"--base", dir, "--config", filepath.Join(dir, "host-config.json"))
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1", "PYTHONIOENCODING=utf-8")
	if cfg.stderr != nil {
		cmd.Stderr = cfg.stderr
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, errors.Wrap(err, "fakeminion: stdin")
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, errors.Wrap(err, "fakeminion: stdout")
	}
	if err := cmd.Start(); err != nil {
		return nil, errors.Wrap(err, "fakeminion: start python")
	}
	h := &PythonHost{
		dir: dir, cmd: cmd, stdin: stdin, logger: cfg.logger,
		pending: map[string]chan response{}, done: make(chan struct{}),
	}
	go h.read(stdout)
	if _, _, err := h.callModule(ctx, "", "host.ping", nil, nil, ""); err != nil {
		_ = h.Close()
		return nil, errors.Wrap(err, "fakeminion: host did not answer")
	}
	cfg.logger.Debug("python host started", slog.String("dir", dir), slog.Int("pid", cmd.Process.Pid))
	return h, nil
}

// MinionDir is the directory of one minion: receipts/, cache/, marker.
func (h *PythonHost) MinionDir(minionID string) string {
	return filepath.Join(h.dir, "minions", minionID)
}

func (h *PythonHost) read(stdout io.Reader) {
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 0, 64*1024), 64<<20)
	for sc.Scan() {
		var r response
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			h.logger.Warn("fakeminion: malformed host line")
			continue
		}
		var id string
		if err := json.Unmarshal(r.ID, &id); err != nil {
			continue
		}
		h.mu.Lock()
		ch, ok := h.pending[id]
		delete(h.pending, id)
		h.mu.Unlock()
		if ok {
			ch <- r
		}
	}
	h.waitErr = h.cmd.Wait()
	close(h.done)
}

// callModule runs fun ("oduflow_job.run", ...) for minionID in a fresh job process, like a
// publication with JID jid. args and kwargs are passed as Salt's load_args_and_kwargs would
// (maps with "__kwarg__": true and "name=value" strings among args become kwargs). The
// return is decoded from JSON with integers as int64 and other numbers as float64. A module
// error is a normal return ("ERROR: ...") with a nonzero retcode, not an error. When ctx ends
// first, the job process is killed (SIGKILL) and ctx's error is returned.
func (h *PythonHost) callModule(ctx context.Context, minionID, fun string, args []any, kwargs map[string]any, jid string) (any, int, error) {
	id := strconv.FormatUint(h.nextID.Add(1), 10)
	if args == nil {
		args = []any{}
	}
	if kwargs == nil {
		kwargs = map[string]any{}
	}
	line, err := json.Marshal(request{ID: id, MinionID: minionID, Fun: fun, Args: args, Kwargs: kwargs, JID: jid})
	if err != nil {
		return nil, 0, errors.Wrap(err, "fakeminion: encode request")
	}
	ch := make(chan response, 1)
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil, 0, errors.WithStack(errHostClosed)
	}
	h.pending[id] = ch
	h.mu.Unlock()
	forget := func() {
		h.mu.Lock()
		delete(h.pending, id)
		h.mu.Unlock()
	}
	if err := h.send(line); err != nil {
		forget()
		return nil, 0, err
	}
	select {
	case r := <-ch:
		ret, err := decodeReturn(r.Return)
		if err != nil {
			return nil, 0, err
		}
		return ret, r.Retcode, nil
	case <-ctx.Done():
		forget()
		h.kill(id)
		return nil, 0, errors.Wrap(ctx.Err(), "fakeminion: call")
	case <-h.done:
		forget()
		return nil, 0, errors.WithStack(errHostExited)
	}
}

func (h *PythonHost) send(line []byte) error {
	h.writeMu.Lock()
	defer h.writeMu.Unlock()
	if _, err := h.stdin.Write(append(line, '\n')); err != nil {
		select {
		case <-h.done:
			return errors.WithStack(errHostExited)
		default:
		}
		return errors.Wrap(err, "fakeminion: write request")
	}
	return nil
}

// kill asks the host to SIGKILL the job process serving request id (best effort).
func (h *PythonHost) kill(id string) {
	line, _ := json.Marshal(request{ID: "kill-" + id, Fun: "host.kill", Args: []any{id}, Kwargs: map[string]any{}})
	_ = h.send(line)
}

// Marker returns the side-effect marker lines of a minion: one line per real state
// execution, "<jid> <state function> <role or state ids> <pid>".
func (h *PythonHost) Marker(minionID string) ([]string, error) {
	data, err := os.ReadFile(filepath.Join(h.MinionDir(minionID), "marker"))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, errors.Wrap(err, "fakeminion: read marker")
	}
	var out []string
	for _, l := range bytes.Split(bytes.TrimRight(data, "\n"), []byte("\n")) {
		if len(l) > 0 {
			out = append(out, string(l))
		}
	}
	return out, nil
}

// Close stops the host: closes its stdin (it finishes running jobs, then exits) and kills
// it if it has not exited after a short grace. Pending calls fail with errHostExited.
func (h *PythonHost) Close() error {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil
	}
	h.closed = true
	h.mu.Unlock()
	_ = h.stdin.Close()
	select {
	case <-h.done:
	case <-afterGrace():
		_ = h.cmd.Process.Kill()
		<-h.done
	}
	return nil
}
