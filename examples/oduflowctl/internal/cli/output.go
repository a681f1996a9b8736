package cli

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/cockroachdb/errors"

	"github.com/oduflow/oduflow-go/oduflow"
	"github.com/oduflow/oduflow-go/receipt"
)

// printer writes command results as one JSON object per line or as text for people.
type printer struct {
	w    io.Writer
	json bool
}

func (e *env) printer() (*printer, error) {
	mode, err := e.g.outputMode(e.stdout)
	if err != nil {
		return nil, err
	}
	return &printer{w: e.stdout, json: mode == "json"}, nil
}

// value prints v as JSON, or calls text to render it for people.
func (p *printer) value(v any, text func(w io.Writer)) error {
	if p.json {
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(p.w, "%s\n", b)
		return err
	}
	text(p.w)
	return nil
}

// response prints the response object: exactly minion_id, request_id, jid (null for
// not_started), status, passed, total.
func (p *printer) response(r oduflow.Response) error {
	return p.value(r, func(w io.Writer) {
		fmt.Fprintf(w, "status      %s\npassed      %d of %d\nminion_id   %s\nrequest_id  %s\njid         %s\n",
			r.Status, r.Passed, r.Total, r.MinionID, r.RequestID, jidText(r.JID))
	})
}

// jidText renders a job id for people: "-" when there is none (not_started).
func jidText(jid *string) string {
	if jid == nil {
		return "-"
	}
	return *jid
}

// finish prints the response a command ends with and returns its exit status (see exitAfter).
func (p *printer) finish(r oduflow.Response, waitErr error) error {
	return exitAfter(p.response(r), waitErr, r.Status)
}

// finishCustom is finish for a custom response.
func (p *printer) finishCustom(r oduflow.CustomResponse, waitErr error) error {
	return exitAfter(p.custom(r), waitErr, r.Status)
}

// exitAfter is a command's result once its response is printed: the print error if any,
// else exit status 1 when waiting for a terminal status failed (waitErr), else statusExit.
func exitAfter(printErr, waitErr error, s receipt.Status) error {
	if printErr != nil {
		return printErr
	}
	if waitErr != nil {
		return silentExit(ExitFailed)
	}
	return statusExit(s)
}

// printLaunchFailure prints the response of a request whose worker could not be launched
// (its claim is failed, worker_launch_failed; nothing was published) and returns err as is.
func (p *printer) printLaunchFailure(r oduflow.Response, err error) error {
	if errors.Is(err, oduflow.ErrWorkerLaunch) && r.RequestID != "" {
		_ = p.response(r)
	}
	return err
}

// statusExit is the exit status for a response: 1 for failed and unknown, 0 otherwise.
func statusExit(s receipt.Status) error {
	switch s {
	case receipt.StatusFailed, receipt.StatusUnknown:
		return silentExit(ExitFailed)
	}
	return nil
}
