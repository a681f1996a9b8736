package salt

import (
	"bytes"
	"strings"

	"github.com/cockroachdb/errors"
)

// Event is one event from the master event bus, or a gap marker. At most one
// of Gap, JobNew and JobReturn is set; none for any other event (Tag and Data
// only). Test the pointers: switch { case ev.Gap != nil: ... }.
type Event struct {
	Tag       string
	Data      map[string]any // tolerant decode (int keys stringified); nil for gaps
	JobNew    *JobNew        // salt/job/<jid>/new
	JobReturn *JobReturn     // salt/job/<jid>/ret/<minion id>
	Gap       *Gap           // events may have been missed here
}

// Gap says that events may have been missed: the connection to the bus was
// lost or re-established, the consumer was too slow and Dropped events were
// discarded, or an event could not be decoded. A consumer waiting for a
// return must poll for it after every gap. Reason is one of (or, when gaps
// merge, several of, joined by "; "): "disconnected", "reconnected",
// "consumer too slow", "undecodable event", "event frame not completed in
// time".
type Gap struct {
	Reason  string
	Dropped int
	// Err is the first cause of the gap when it was an error (test with
	// errors.Is: ErrLimitExceeded for a frame beyond its Limits; otherwise
	// an undecodable frame, a frame not completed within WithFrameTimeout,
	// a network error); nil for overflow and reconnection.
	Err error
}

// JobNew is salt/job/<jid>/new, fired by the master when it accepts a
// publish. It does not prove that the publication left the master.
type JobNew struct {
	JID     JID
	Fun     string
	Args    []any
	Minions []string
	Missing []string
	User    string
	TgtType string
	Target  any // string, or []any of ids for list targets
}

// JobReturn is salt/job/<jid>/ret/<minion id>: one minion's return.
// Duplicates are possible (the minion retries its return): deduplicate by
// (JID, MinionID).
type JobReturn struct {
	JID      JID
	MinionID string
	Fun      string
	FunArgs  []any
	Return   any // maps map[string]any, ints int64, floats float64, raw bytes string
	Retcode  int // -1 when retcode is absent or not an integer (multi-function jobs)
	Success  bool
	Out      string
	Metadata map[string]any // kwargs.metadata of the publish, if any
	// Cmd and ID are the data's own "cmd" and "id" ("" when absent). A master-handled return carries
	// cmd "_return" and the sender's id; an event a minion fired through _minion_event carries cmd
	// "_minion_event" (or, in its batched form, whatever the sender wrote): neither proves the sender.
	Cmd string
	ID  string
}

const tagEnd = "\n\n"

// decodeEventFrame decodes one event-bus frame (the msgpack map
// {head, body}, without any length prefix) into an Event, within
// defaultEventDecodeLimits.
//
// The result does not alias frame: the caller may reuse it.
func decodeEventFrame(frame []byte) (Event, error) {
	ev, _, err := decodeEventText(string(frame), frame, defaultEventDecodeLimits())
	return ev, err
}

// decodeEventText decodes the frame whose text is s (the event aliases s) and
// whose bytes are frame (read only, for the reference decoder). est is the
// estimate of what the decoded values hold beyond s.
func decodeEventText(s string, frame []byte, lim decodeLimits) (Event, int64, error) {
	ev, est, ok, over := fastDecodeEvent(s, lim)
	if ok {
		return ev, est, nil
	}
	if over {
		return Event{}, 0, budgetError("event frame too costly to decode")
	}
	// the reference decoder gives the error (or, should the fast path
	// ever refuse a valid frame, the event)
	body, err := frameBody(frame, lim)
	if err != nil {
		return Event{}, 0, err
	}
	ev, err = decodeEventBody(body, lim)
	return ev, int64(len(frame)), err
}

// frameBody returns the body of a {head, body} frame without copying it.
func frameBody(frame []byte, lim decodeLimits) ([]byte, error) {
	d := &tolerantDecoder{b: frame, bud: newDecodeBudget(lim)}
	h, err := d.need(1)
	if err != nil {
		return nil, err
	}
	var n int
	switch c := h[0]; {
	case c&0xf0 == 0x80:
		n = int(c & 0x0f)
	case c == 0xde:
		n, err = d.length(2)
	case c == 0xdf:
		n, err = d.length(4)
	default:
		return nil, errors.Wrap(errMsgpack, "event frame is not a map")
	}
	if err != nil {
		return nil, err
	}
	var body []byte
	for i := 0; i < n; i++ {
		k, err := d.value(1)
		if err != nil {
			return nil, err
		}
		if k == "body" {
			if body, err = d.rawString(); err != nil {
				return nil, err
			}
			continue
		}
		if _, err := d.value(1); err != nil {
			return nil, err
		}
	}
	if d.off != len(frame) {
		return nil, errors.Wrap(errMsgpack, "trailing bytes after event frame")
	}
	if body == nil {
		return nil, errors.Wrap(errMsgpack, "event frame without body")
	}
	return body, nil
}

// decodeEventBody splits tag "\n\n" data at the first separator.
func decodeEventBody(body []byte, lim decodeLimits) (Event, error) {
	i := bytes.Index(body, []byte(tagEnd))
	if i < 0 {
		return Event{}, errors.Wrap(errMsgpack, "event body without tag separator")
	}
	tag := string(body[:i])
	dv, err := decodeValueLimited(body[i+2:], lim)
	if err != nil {
		return Event{}, errors.Wrap(err, "event data")
	}
	data, ok := dv.(map[string]any)
	if !ok {
		return Event{}, errors.Wrap(errMsgpack, "event data is not a map")
	}
	return classifyEvent(tag, data), nil
}

func classifyEvent(tag string, data map[string]any) Event {
	ev := Event{Tag: tag, Data: data}
	// salt/job/<jid>/new or salt/job/<jid>/ret/<minion> (no further "/")
	rest, ok := strings.CutPrefix(tag, "salt/job/")
	if !ok {
		return ev
	}
	jidStr, rest, ok := strings.Cut(rest, "/")
	if !ok || !isJID(jidStr) {
		return ev
	}
	jid := JID(jidStr)
	minion, isRet := strings.CutPrefix(rest, "ret/")
	switch {
	case rest == "new":
		n := &JobNew{JID: jid, Args: anyList(data["arg"]), Target: data["tgt"]}
		n.Fun, _ = data["fun"].(string)
		n.User, _ = data["user"].(string)
		n.TgtType, _ = data["tgt_type"].(string)
		n.Minions, _ = stringList(data["minions"])
		n.Missing, _ = stringList(data["missing"])
		ev.JobNew = n
	case isRet && minion != "" && !strings.Contains(minion, "/"):
		r := &JobReturn{JID: jid, MinionID: minion, FunArgs: anyList(data["fun_args"]), Return: data["return"], Retcode: -1}
		r.Fun, _ = data["fun"].(string)
		r.Success, _ = data["success"].(bool)
		r.Out, _ = data["out"].(string)
		r.Cmd, _ = data["cmd"].(string)
		r.ID, _ = data["id"].(string)
		r.Metadata, _ = data["metadata"].(map[string]any)
		if rc, ok := data["retcode"].(int64); ok {
			r.Retcode = int(rc)
		}
		ev.JobReturn = r
	}
	return ev
}

// isJID is ParseJID's check without its error.
func isJID(s string) bool {
	if len(s) != 20 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

func anyList(v any) []any {
	if a, ok := v.([]any); ok {
		return a
	}
	return nil
}
