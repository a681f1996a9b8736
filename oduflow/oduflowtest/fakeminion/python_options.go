package fakeminion

import (
	"io"
	"log/slog"
	"time"
)

// PythonConfig is the host's fake Salt behaviour.
type PythonConfig struct {
	// SaltVersion presented by salt.version and grains (default "3006.0"). A version before
	// 3006.0 makes the module's runtime guard fail and oduflow_job.run refuse, as in real Salt.
	SaltVersion string
	// Results replaces the fixture state return of a role (key: "roles.client_stack", ...).
	Results map[string]any
	// Delays makes the state function of a role (or "custom") sleep before returning.
	Delays map[string]time.Duration
	// Raise makes the state function of the listed roles (or "custom") raise an exception.
	Raise []string
	// MultiprocessingOff sets the minion option multiprocessing: False (the module refuses).
	MultiprocessingOff bool
	// Pillar is every minion's pillar (capabilities reports pillar readiness from it).
	Pillar map[string]any
	// MinionOpts are extra minion options (e.g. oduflow_pillar_ready_key).
	MinionOpts map[string]any
}

type config struct {
	python string
	host   PythonConfig
	logger *slog.Logger
	stderr io.Writer
}

// PythonOption configures StartPython.
type PythonOption func(*config)

// WithPython sets the Python interpreter (default /usr/bin/python3 when present, else "python3" from
// PATH).
func WithPython(path string) PythonOption { return func(c *config) { c.python = path } }

// WithPythonConfig sets the fake Salt behaviour.
func WithPythonConfig(hc PythonConfig) PythonOption { return func(c *config) { c.host = hc } }

// WithLogger sets the logger (default: discard).
func WithLogger(l *slog.Logger) PythonOption { return func(c *config) { c.logger = l } }

// WithStderr receives the host process's standard error (default: discarded).
func WithStderr(w io.Writer) PythonOption { return func(c *config) { c.stderr = w } }
