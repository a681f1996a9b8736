package salt

import "strings"

// Event is one event from the master event bus, or a gap marker. At most one
// of Gap, JobNew, JobPublish and JobReturn is set; none for any other event
// (Tag and Data only). Test the pointers: switch { case ev.Gap != nil: ... }.
type Event struct {
	// Tag is the event's tag, without a cluster prefix: a tag
	// "cluster/event/<peer>/<tag>" (Salt 3007+ cluster mode) is delivered
	// as <tag>, with Peer set to <peer>.
	Tag        string
	Data       map[string]any // tolerant decode (int keys stringified); nil for gaps
	JobNew     *JobNew        // salt/job/<jid>/new
	JobPublish *JobPublish    // salt/job/<jid>/publish (Salt 3007+): never a return
	JobReturn  *JobReturn     // salt/job/<jid>/ret/<minion id>
	Gap        *Gap           // events may have been missed here
	// Peer is the cluster peer (another master of a Salt 3007+ cluster) the
	// event came from: the <peer> of a "cluster/event/<peer>/" tag, or the
	// data's "__peer_id" that such a master adds when it republishes a peer's
	// event locally. "" for an event of this master.
	Peer string
}

// Gap reasons.
const (
	gapReasonDisconnected = "disconnected"
	gapReasonReconnected  = "reconnected"
	gapReasonOverflow     = "consumer too slow"
	gapReasonUndecodable  = "undecodable event"
	gapReasonFrameTimeout = "event frame not completed in time"
	gapReasonStalled      = "bus stalled"
)

// Gap says that events may have been missed: the connection to the bus was
// lost or re-established, the consumer was too slow and Dropped events were
// discarded, or an event could not be decoded. A consumer waiting for a
// return must poll for it after every gap. Reason is one of (or, when gaps
// merge, several of, joined by "; "): "disconnected", "reconnected",
// "consumer too slow", "undecodable event", "event frame not completed in
// time", "bus stalled" (nothing at all arrived within the time
// EventStream.ExpectEvents was told to expect an event; Err is ErrBusStalled).
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

// JobPublish is salt/job/<jid>/publish, fired by Salt 3007+ masters (not
// 3006) with a copy of each publish load, right after salt/job/<jid>/new. It
// is a trace of the publish, never a return: it proves neither that the
// publication left the master nor that any minion ran it.
type JobPublish struct {
	JID     JID
	Fun     string
	Args    []any
	User    string
	TgtType string
	Target  any // string, or []any of ids for list targets
	Ret     string
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

// clusterTagPrefix starts the tag of an event a Salt 3007+ cluster master
// forwards to its peers: "cluster/event/<peer>/<tag>".
const clusterTagPrefix = "cluster/event/"

// unwrapClusterTag splits "cluster/event/<peer>/<tag>" into <peer> and <tag>;
// any other tag is returned as it is, with peer "".
func unwrapClusterTag(tag string) (peer, inner string) {
	rest, ok := strings.CutPrefix(tag, clusterTagPrefix)
	if !ok {
		return "", tag
	}
	peer, inner, ok = strings.Cut(rest, "/")
	if !ok || peer == "" || inner == "" {
		return "", tag
	}
	return peer, inner
}

func classifyEvent(tag string, data map[string]any) Event {
	peer, tag := unwrapClusterTag(tag)
	if peer == "" {
		peer, _ = data["__peer_id"].(string)
	}
	ev := Event{Tag: tag, Data: data, Peer: peer}
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
	case rest == "publish":
		p := &JobPublish{JID: jid, Args: anyList(data["arg"]), Target: data["tgt"]}
		p.Fun, _ = data["fun"].(string)
		p.User, _ = data["user"].(string)
		p.TgtType, _ = data["tgt_type"].(string)
		p.Ret, _ = data["ret"].(string)
		ev.JobPublish = p
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
