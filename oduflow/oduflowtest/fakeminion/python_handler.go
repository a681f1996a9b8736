package fakeminion

import (
	"context"
	"log/slog"
	"strings"

	"github.com/oduflow/oduflow-go/salt/salttest"
)

// Handler returns a salttest minion handler that runs oduflow_job.* publications through the real
// module for minionID (the id the master routes to it: AddPython wires both); test.ping answers true,
// other functions are not available. The job's JID becomes the module's __pub_jid. A host failure is
// reported like a minion exception (retcode 254, no raw details).
func (h *PythonHost) Handler(minionID string) salttest.MinionHandler {
	return func(ctx context.Context, job salttest.Job) (any, int) {
		if !strings.HasPrefix(job.Fun, "oduflow_job.") {
			return notModule(ctx, job)
		}
		ret, code, err := h.callModule(ctx, minionID, job.Fun, job.Args, job.Kwargs, job.JID)
		if err != nil {
			h.logger.Warn("fakeminion: job not completed", slog.String("fun", job.Fun), slog.String("jid", job.JID))
			return "ERROR: the minion job did not complete", 254
		}
		return ret, code
	}
}

// notModule answers what is not oduflow_job.*: test.ping answers true, everything else is "not
// available" with retcode 254, as in Salt.
func notModule(_ context.Context, job salttest.Job) (any, int) {
	if job.Fun == "test.ping" {
		return true, 0
	}
	return "'" + job.Fun + "' is not available.", 254
}
