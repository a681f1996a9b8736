package cli

import (
	"encoding/json"
	"fmt"
	"io"

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
		jid := "-"
		if r.JID != nil {
			jid = *r.JID
		}
		fmt.Fprintf(w, "status      %s\npassed      %d of %d\nminion_id   %s\nrequest_id  %s\njid         %s\n",
			r.Status, r.Passed, r.Total, r.MinionID, r.RequestID, jid)
	})
}

// statusExit is the exit status for a response: 1 for failed and unknown, 0 otherwise.
func statusExit(s receipt.Status) error {
	switch s {
	case receipt.StatusFailed, receipt.StatusUnknown:
		return silentExit(ExitFailed)
	}
	return nil
}
