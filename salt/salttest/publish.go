package salttest

import (
	"github.com/cockroachdb/errors"
)

// Publication is a publication that actually went out to minions (step 14 of the publish
// processing order).
type Publication struct {
	JID      string
	Fun      string
	Args     []any          // the publication "arg", plain Go values (kwarg maps included)
	Target   []string       // minions the master resolved (the reply's "minions")
	Missing  []string       // list-target ids without an accepted key
	User     string         // effective user (eauth/token name, else the request's user)
	Metadata map[string]any // kwargs.metadata, nil when absent

	tgt     any    // the request's tgt (string or []any)
	tgtType string // the request's tgt_type
}

// publish is ClearFuncs.publish, in the order of the protocol spec section 3.4.
func (s *Master) publish(load *omap) (any, error) {
	extra := &omap{}
	if v, ok := load.Get("kwargs"); ok {
		m, isMap := v.(*omap)
		if !isMap {
			return nil, errors.Wrap(errException, "kwargs is not a dict")
		}
		extra = m
	}
	// 1. publisher_acl_blacklist
	userV, err := need(load, "user")
	if err != nil {
		return nil, err
	}
	funV, err := need(load, "fun")
	if err != nil {
		return nil, err
	}
	fun, ok := funV.(string)
	if !ok {
		return nil, errors.Wrap(errException, "multi-function jobs are not simulated")
	}
	user, _ := userV.(string)
	if s.blacklisted(user, fun) {
		return newOmap("error", errMap("AuthorizationError", "Authorization error occurred.")), nil
	}
	// 2. check_minions
	tgt, err := need(load, "tgt")
	if err != nil {
		return nil, err
	}
	tgtType := "glob"
	if v, ok := load.Get("tgt_type"); ok {
		tgtType, _ = v.(string)
	}
	minions, missing := s.checkMinions(tgt, tgtType)

	// 3. authenticate
	ak := prepAuthInfo(extra)
	var check authCheck
	if ak.kind == "user" {
		check = s.checkAuthentication(load, ak.kind, true)
	} else {
		check = s.checkAuthentication(extra, ak.kind, true)
	}
	if check.errMap != nil {
		return s.publishDenied(load, "AuthenticationError", "Authentication error occurred."), nil
	}
	// 4. authorize (eauth, token, and users with an ACL)
	if ak.kind != "user" || len(check.authList) > 0 {
		if !s.publishAuthorized(check.authList, fun, minions) {
			return s.publishDenied(load, "AuthorizationError", "Authorization error occurred."), nil
		}
		// 5. effective user
		load.Set("user", check.username)
	}
	// 6. no minions
	if len(minions) == 0 {
		msg := "Master could not resolve minions for target "
		if str, ok := tgt.(string); ok {
			msg += str
		} else {
			msg += pyRepr(tgt)
		}
		return newOmap("enc", "clear", "load", newOmap("jid", nil, "minions", []string{}, "error", msg)), nil
	}
	// 8. jid: a preassigned (truthy) jid is used verbatim
	jid := ""
	if v, ok := load.Get("jid"); ok {
		if str, isStr := v.(string); isStr && str != "" {
			jid = str
		} else if v != nil && v != false && v != "" {
			jid = pyRepr(v)
		}
	}
	if jid == "" {
		jid = s.newJID()
	}
	load.Set("jid", jid)
	// 9. legacy job event
	s.fire(jid, newOmap("minions", minions))
	// 10. salt/job/<jid>/new (KeyError on missing tgt_type or arg, after event 9)
	tt, err := need(load, "tgt_type")
	if err != nil {
		return nil, err
	}
	arg, err := need(load, "arg")
	if err != nil {
		return nil, err
	}
	userNow, _ := load.Get("user")
	s.fire("salt/job/"+jid+"/new", newOmap("jid", jid, "tgt_type", tt, "tgt", tgt,
		"user", userNow, "fun", fun, "arg", arg, "minions", minions, "missing", missing))
	// 13. the publication needs "ret"
	if _, err := need(load, "ret"); err != nil {
		return nil, err
	}
	args, isList := arg.([]any)
	if !isList {
		args = []any{arg}
	}
	pubUser, _ := load.Str("user")
	pub := Publication{JID: jid, Fun: fun, Args: plain(args).([]any), Target: append([]string(nil), minions...),
		Missing: append([]string(nil), missing...), tgt: plain(tgt), tgtType: tgtType, User: pubUser}
	var metadata any
	if md, ok := extra.Get("metadata"); ok {
		metadata = md
		if m, isMap := plain(md).(map[string]any); isMap {
			pub.Metadata = m
		}
	}
	// 13b. Generation3007+: salt/job/<jid>/publish, a copy of the publish load (_prep_pub's
	// payload, in its key order)
	if s.cfg.generation.publishEvent() {
		retv, _ := load.Get("ret")
		pl := newOmap("fun", fun, "arg", arg, "tgt", tgt, "jid", jid, "ret", retv, "tgt_type", tt)
		if metadata != nil {
			pl.Set("metadata", metadata)
		}
		pl.Set("user", userNow)
		s.fire("salt/job/"+jid+"/publish", pl)
	}
	// 14. publish to the minions
	s.mu.Lock()
	s.publications = append(s.publications, pub)
	s.mu.Unlock()
	s.state.notify()
	s.deliver(pub, args, metadata)
	// 15. reply
	return newOmap("enc", "clear", "load", newOmap("jid", jid, "minions", minions, "missing", missing)), nil
}

// publishDenied fires salt/job/<jid>/error (salt/job/error without a jid) with the whole load
// plus the error, then returns the bare error reply.
func (s *Master) publishDenied(load *omap, name, message string) *omap {
	em := errMap(name, message)
	data := load.Clone()
	data.Set("error", em)
	tag := "salt/job/error"
	if v, ok := load.Get("jid"); ok {
		if str, isStr := v.(string); isStr && str != "" {
			tag = "salt/job/" + str + "/error"
		}
	}
	s.fire(tag, data)
	return newOmap("error", em)
}

// Publications returns every publication that actually went out, in order.
func (s *Master) Publications() []Publication {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Publication(nil), s.publications...)
}

// PublicationCount counts the publications that went out for fun and jid ("" matches any):
// PublicationCount("oduflow_job.run", jid) == 1 is the at-most-once assertion of a test.
func (s *Master) PublicationCount(fun, jid string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, p := range s.publications {
		if (fun == "" || p.Fun == fun) && (jid == "" || p.JID == jid) {
			n++
		}
	}
	return n
}
