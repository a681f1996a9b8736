package fakeminion

import (
	"context"
	"log/slog"
	"strings"

	"github.com/oduflow/oduflow-go/salt/salttest"
)

// HandlerOption configures Handler.
type HandlerOption func(*handlerConfig)

type handlerConfig struct{ fallback salttest.MinionHandler }

// WithFallback handles every function that is not oduflow_job.* (default: test.ping
// answers true, everything else is "not available" with retcode 254, as in Salt).
func WithFallback(h salttest.MinionHandler) HandlerOption {
	return func(c *handlerConfig) { c.fallback = h }
}

// Handler returns a simulator minion handler that runs oduflow_job.* publications through
// the real module for minionID (the simulator's minion id should be the same). The job's JID
// becomes the module's __pub_jid. A host failure is reported like a minion exception
// (retcode 254, no raw details).
func (h *PythonHost) Handler(minionID string, opts ...HandlerOption) salttest.MinionHandler {
	cfg := handlerConfig{fallback: defaultFallback}
	for _, o := range opts {
		o(&cfg)
	}
	return func(ctx context.Context, job salttest.Job) (any, int) {
		if !strings.HasPrefix(job.Fun, "oduflow_job.") {
			return cfg.fallback(ctx, job)
		}
		ret, code, err := h.Call(ctx, minionID, job.Fun, job.Args, job.Kwargs, job.JID)
		if err != nil {
			h.logger.Warn("fakeminion: job not completed", slog.String("fun", job.Fun), slog.String("jid", job.JID))
			return "ERROR: the minion job did not complete", 254
		}
		return ret, code
	}
}

func defaultFallback(_ context.Context, job salttest.Job) (any, int) {
	if job.Fun == "test.ping" {
		return true, 0
	}
	return "'" + job.Fun + "' is not available.", 254
}
