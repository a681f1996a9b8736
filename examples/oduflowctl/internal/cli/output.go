package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/oduflow/oduflow-go/oduflow"
	"github.com/oduflow/oduflow-go/oduflow/claims"
	"github.com/oduflow/oduflow-go/receipt"
)

// printer writes command results as one JSON object per line or as text for people.
type printer struct {
	w    io.Writer
	json bool
	e    *env
}

func (e *env) printer() (*printer, error) {
	mode, err := e.g.outputMode(e.stdout)
	if err != nil {
		return nil, err
	}
	return &printer{w: e.stdout, json: mode == "json", e: e}, nil
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

// response prints the response object: minion_id, request_id, jid (null for not_started), status,
// passed, total and error_code ("" when none); as text, the error_code line only when there is one.
func (p *printer) response(r oduflow.Response) error {
	return p.value(r, func(w io.Writer) {
		fmt.Fprintf(w, "status      %s\npassed      %d of %d\nminion_id   %s\nrequest_id  %s\njid         %s\n",
			r.Status, r.Passed, r.Total, r.MinionID, r.RequestID, jidText(r.JID))
		if r.ErrorCode != "" {
			fmt.Fprintf(w, "error_code  %s\n", r.ErrorCode)
		}
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
	code := p.errorCode(r.MinionID, r.RequestID, r.Status, r.ErrorCode)
	return exitAfter(p.response(r), waitErr, r.Status, code)
}

// finishCustom is finish for a custom response (the claim is the execution's).
func (p *printer) finishCustom(r oduflow.CustomResponse, waitErr error) error {
	code := p.errorCode(r.MinionID, r.ExecutionID, r.Status, r.ErrorCode)
	return exitAfter(p.custom(r), waitErr, r.Status, code)
}

// errorCode is the error code of a failed or unknown request: the response's own (answered), else the one
// recorded in its claim (Lookup); it is also printed on stderr (one line) for the exit status's reader.
func (p *printer) errorCode(minion, request string, s receipt.Status, answered claims.ErrorCode) claims.ErrorCode {
	if s != receipt.StatusFailed && s != receipt.StatusUnknown {
		return ""
	}
	code := answered
	if code == "" && p.e != nil && p.e.disp != nil {
		if c, err := p.e.disp.Lookup(p.e.ctx, minion, request); err == nil {
			code = c.ErrorCode
		}
	}
	if code == "" || p.e == nil {
		return code
	}
	fmt.Fprintf(p.e.stderr, "oduflowctl: request %s %s: error code %s%s\n", request, s, code, p.guardReason(minion, code))
	return code
}

// exitAfter is a command's result once its response is printed: the print error if any; else, when
// waiting ended early (waitErr), 7 while the request still runs or the error's own status; else the
// status of the response and its error code (statusCode).
func exitAfter(printErr, waitErr error, s receipt.Status, code claims.ErrorCode) error {
	if printErr != nil {
		return printErr
	}
	if waitErr != nil {
		if !s.Terminal() && s != receipt.StatusUnknown &&
			(errors.Is(waitErr, context.DeadlineExceeded) || errors.Is(waitErr, context.Canceled)) {
			return silentExit(ExitStillRunning)
		}
		return waitErr
	}
	if c := statusCode(s, code, false); c != ExitOK {
		return silentExit(c)
	}
	return nil
}

// printLaunchFailure prints the response of a request whose worker could not be launched
// (its claim is failed, worker_launch_failed; nothing was published) and returns err as is.
func (p *printer) printLaunchFailure(r oduflow.Response, err error) error {
	if errors.Is(err, oduflow.ErrWorkerLaunch) && r.RequestID != "" {
		_ = p.response(r)
	}
	return err
}

// guardReason is what the stderr line adds to runtime_guard_failed: the minion module's own reason, read
// now by a Ping (the claim records the code only), so an operator learns which of Salt's internals the
// module did not recognise without running the salt CLI. It is "" for other codes or when the minion
// cannot say (the code alone is then the answer).
func (p *printer) guardReason(minion string, code claims.ErrorCode) string {
	if code != claims.CodeRuntimeGuard || p.e == nil || p.e.disp == nil {
		return ""
	}
	r, err := p.e.disp.Ping(p.e.ctx, minion)
	if err != nil || r.RuntimeGuardError == "" {
		return ""
	}
	return " (the minion module's guard: " + r.RuntimeGuardError + ")"
}
