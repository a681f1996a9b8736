package saltcmd

import (
	"strings"

	"github.com/cockroachdb/errors"

	"github.com/oduflow/oduflow-go/salt"
)

// ParseReturn reads a job return event (tag salt/job/<jid>/ret/<minion id> and its data as the
// event bus decoded it) into a Result in state Returned. It is strict where the bus is hostile
// (any minion can fire any tag): the data's cmd must be "_return" (a master-handled return,
// not an event a minion fired) and its id the tag's minion; jid, when present, must be the
// tag's. It fails with ErrMalformedReturn otherwise. Retcode is -1 when absent or not an
// integer; Success is true only when the data says so.
func ParseReturn(tag string, data map[string]any) (Result, error) {
	rest, ok := strings.CutPrefix(tag, "salt/job/")
	if !ok {
		return Result{}, errors.Wrap(ErrMalformedReturn, "tag is not salt/job/...")
	}
	jidText, id, ok := strings.Cut(rest, "/ret/")
	if !ok || id == "" || strings.Contains(id, "/") {
		return Result{}, errors.Wrap(ErrMalformedReturn, "tag is not salt/job/<jid>/ret/<id>")
	}
	jid, err := salt.ParseJID(jidText)
	if err != nil {
		return Result{}, errors.Wrap(ErrMalformedReturn, "tag jid")
	}
	if data == nil {
		return Result{}, errors.Wrap(ErrMalformedReturn, "no data")
	}
	if cmd, _ := data["cmd"].(string); cmd != "_return" {
		return Result{}, errors.Wrap(ErrMalformedReturn, "cmd is not _return")
	}
	if did, _ := data["id"].(string); did != id {
		return Result{}, errors.Wrap(ErrMalformedReturn, "data id differs from the tag's minion")
	}
	if v, ok := data["jid"]; ok {
		if s, _ := v.(string); s != jidText {
			return Result{}, errors.Wrap(ErrMalformedReturn, "data jid differs from the tag's")
		}
	}
	ret, ok := data["return"]
	if !ok {
		return Result{}, errors.Wrap(ErrMalformedReturn, "no return key")
	}
	r := Result{Minion: id, State: Returned, JID: jid, Return: ret, Retcode: -1}
	r.Fun, _ = data["fun"].(string)
	r.Out, _ = data["out"].(string)
	switch rc := data["retcode"].(type) {
	case int64:
		if rc >= -1<<31 && rc < 1<<31 {
			r.Retcode = int(rc)
		}
	case uint64:
		if rc < 1<<31 {
			r.Retcode = int(rc)
		}
	}
	r.Success, _ = data["success"].(bool)
	return r, nil
}

// findJobAnswer is what one saltutil.find_job return says about the job it asked for.
type findJobAnswer int

const (
	findJobUnusable   findJobAnswer = iota // an error string, a failed retcode: no answer
	findJobNotRunning                      // {}: the minion does not run the job (any more)
	findJobRunning                         // the job's proc data
)

// classifyFindJob reads a find_job return the way Salt's get_iter_returns does: {} is "not
// running"; a map with the job's data is "running"; a string (an exception) or a failed
// retcode proves nothing. jid is the job asked about: proc data of another job does not count.
func classifyFindJob(r Result, jid salt.JID) findJobAnswer {
	if r.Retcode > 0 {
		return findJobUnusable
	}
	m, ok := r.Return.(map[string]any)
	if !ok {
		return findJobUnusable
	}
	if len(m) == 0 {
		return findJobNotRunning
	}
	if inner, ok := m["return"].(map[string]any); ok && len(inner) == 0 {
		return findJobNotRunning
	}
	if j, ok := m["jid"].(string); ok && j != string(jid) {
		return findJobUnusable
	}
	return findJobRunning
}
