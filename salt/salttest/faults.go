package salttest

import (
	"strings"
	"time"
)

// faults holds pending fault injections; each call of a Drop/Delay/Malform/... method arms one
// occurrence, consumed by the next matching request or return. Guarded by Master.mu.
type faults struct {
	dropReply    map[string]int
	malformReply map[string]int
	delayReply   map[string][]time.Duration
	dropReturn   map[string]int
	dupReturn    map[string]int
	exception    map[string]int
	// rewritePublish edits the next publish replies (jid, minions) after the publish happened.
	rewritePublish []func(jid string, minions []string) (string, []string)
}

func take(m map[string]int, key string) bool {
	for _, k := range []string{key, ""} {
		if m[k] > 0 {
			m[k]--
			return true
		}
	}
	return false
}

func inc(m *map[string]int, key string) {
	if *m == nil {
		*m = map[string]int{}
	}
	(*m)[key]++
}

// replyFault is what happens to the reply of one request.
type replyFault struct {
	drop    bool
	malform bool
	delay   time.Duration
}

// funArmed reports whether a reply fault is armed for a function name (a selector with a dot), so that
// the request's function must be decoded to match it; guarded by s.mu.
func (f *faults) funArmed() bool {
	for _, m := range []map[string]int{f.dropReply, f.malformReply} {
		for k, n := range m {
			if n > 0 && strings.Contains(k, ".") {
				return true
			}
		}
	}
	for k, q := range f.delayReply {
		if len(q) > 0 && strings.Contains(k, ".") {
			return true
		}
	}
	return false
}

// takeReplyFault takes the fault armed for this request: by its function (a publish of fun, when fun
// is not ""), else by its cmd, else for any request.
func (s *Master) takeReplyFault(cmd, fun string) replyFault {
	s.mu.Lock()
	defer s.mu.Unlock()
	var f replyFault
	keys := []string{cmd}
	if fun != "" {
		keys = []string{fun, cmd}
	}
	for _, k := range keys {
		if f.drop = take(s.faults.dropReply, k); f.drop {
			break
		}
	}
	if !f.drop {
		for _, k := range keys {
			if f.malform = take(s.faults.malformReply, k); f.malform {
				break
			}
		}
	}
	for _, k := range append(keys, "") {
		if q := s.faults.delayReply[k]; len(q) > 0 {
			f.delay = q[0]
			s.faults.delayReply[k] = q[1:]
			break
		}
	}
	return f
}

// DropNextReply makes the next request that sel selects be processed normally (a publish IS published)
// but never answered: the client sees nothing. sel is a function name ("oduflow_job.run": the next
// publish of that function, whatever is published before it), a cmd ("publish": the next publish of any
// function, "runner", "mk_token", ...), or "" for the next request of any kind. A lost publish reply of
// the run itself is DropNextReply("oduflow_job.run"): "publish" would drop the dispatcher's preflight
// publication of oduflow_job.capabilities, which comes first.
//
// The same selectors serve DelayNextReply and MalformNextReply.
func (s *Master) DropNextReply(sel string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	inc(&s.faults.dropReply, sel)
}

// DelayNextReply processes the next request sel selects (see DropNextReply) at once but sends its reply only
// after d (the simulator keeps going if the client gives up meanwhile).
func (s *Master) DelayNextReply(sel string, d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.faults.delayReply == nil {
		s.faults.delayReply = map[string][]time.Duration{}
	}
	s.faults.delayReply[sel] = append(s.faults.delayReply[sel], d)
}

// MalformNextReply processes the next request sel selects (see DropNextReply), then answers with bytes that are
// not a msgpack document (the real reply, truncated; or the reserved byte 0xc1).
func (s *Master) MalformNextReply(sel string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	inc(&s.faults.malformReply, sel)
}

// ExceptionNextReply makes the next request with this cmd ("" = any) fail inside the master before it
// does anything (nothing is published): the reply is "Some exception handling minion payload", as when a
// ClearFuncs method raises.
func (s *Master) ExceptionNextReply(cmd string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	inc(&s.faults.exception, cmd)
}

func (s *Master) takeException(cmd string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return take(s.faults.exception, cmd)
}

// DropNextReturn lets the minion run the next job with this JID ("" = any) but never fires its
// return event.
func (s *Master) DropNextReturn(jid string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	inc(&s.faults.dropReturn, jid)
}

// DuplicateNextReturn fires the return event of the next job with this JID ("" = any) twice,
// as a minion's return retries can.
func (s *Master) DuplicateNextReturn(jid string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	inc(&s.faults.dupReturn, jid)
}

func malform(reply []byte) []byte {
	if len(reply) > 1 {
		return append([]byte(nil), reply[:len(reply)/2]...)
	}
	return []byte{0xc1}
}

// RewriteNextPublishReply lets the next publish be processed normally (it IS published), then
// replaces the jid and minions of its reply by what f returns: a master (or a man in the middle)
// whose acknowledgement does not match the request.
func (s *Master) RewriteNextPublishReply(f func(jid string, minions []string) (string, []string)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults.rewritePublish = append(s.faults.rewritePublish, f)
}

// rewritePublishReply applies one armed RewriteNextPublishReply to a successful publish reply.
func (s *Master) rewritePublishReply(reply any) any {
	m, ok := reply.(*omap)
	if !ok {
		return reply
	}
	load, ok := m.Get("load")
	lm, isMap := load.(*omap)
	if !ok || !isMap {
		return reply
	}
	jid, _ := lm.Str("jid")
	mv, _ := lm.Get("minions")
	minions, _ := mv.([]string)
	s.mu.Lock()
	if len(s.faults.rewritePublish) == 0 {
		s.mu.Unlock()
		return reply
	}
	f := s.faults.rewritePublish[0]
	s.faults.rewritePublish = s.faults.rewritePublish[1:]
	s.mu.Unlock()
	jid, minions = f(jid, append([]string(nil), minions...))
	lm.Set("jid", jid)
	lm.Set("minions", minions)
	return reply
}
