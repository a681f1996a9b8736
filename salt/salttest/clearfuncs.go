package salttest

import (
	"fmt"
	"sort"
	"time"
)

// runnerWheelAuth is the common head of ClearFuncs.runner and ClearFuncs.wheel: authenticate
// at the top level of the load, authorize with spec_check, drop the sensitive keys. It returns
// the effective user name, or the error reply.
func (s *Master) runnerWheelAuth(load *omap, form string) (string, *omap, error) {
	ak := prepAuthInfo(load)
	check := s.checkAuthentication(load, ak.kind, false)
	if check.errMap != nil {
		return "", newOmap("error", check.errMap), nil
	}
	username := check.username
	if ak.kind != "user" {
		funV, err := need(load, "fun")
		if err != nil {
			return "", nil, err
		}
		fun, _ := funV.(string)
		ok, em := specCheck(check.authList, fun, form)
		if em != nil {
			return "", newOmap("error", em), nil
		}
		if !ok {
			return "", newOmap("error", errMap(ak.errName, fmt.Sprintf(
				`Authentication failure of type "%s" occurred for user %s.`, ak.kind, username))), nil
		}
		for _, k := range ak.sensitive {
			load.Del(k)
		}
	} else {
		username = "root" // the master's OS user
		if u, ok := load.Str("user"); ok && len(u) > 0 {
			username = u
			if len(u) > 5 && u[:5] == "sudo_" {
				username = "root"
			}
		}
	}
	return username, nil, nil
}

// runner is ClearFuncs.runner: asynchronous; the reply is {tag, jid} and the result is only
// fired on the event bus (salt/run/<jid>/new, then /ret).
func (s *Master) runner(load *omap) (any, error) {
	user, denied, err := s.runnerWheelAuth(load, "runner")
	if err != nil || denied != nil {
		return denied, err
	}
	funV, ok := load.Get("fun")
	if !ok {
		return newOmap("error", newOmap("name", "KeyError", "args", []any{"fun"}, "message", "'fun'")), nil
	}
	load.Del("fun")
	fun, _ := funV.(string)
	var args []any
	kwargs := &omap{}
	if kv, ok := load.Get("kwarg"); ok {
		if km, isMap := kv.(*omap); isMap {
			if km.Has("arg") || km.Has("kwarg") {
				if a, ok := km.Get("arg"); ok {
					args, _ = a.([]any)
				}
				if k, ok := km.Get("kwarg"); ok {
					if kmm, isMap := k.(*omap); isMap {
						kwargs = kmm
					}
				}
			} else {
				kwargs = km
			}
		}
	}
	funArgs := append([]any{}, args...)
	if kwargs.Len() > 0 {
		funArgs = append(funArgs, kwargs)
	}
	jid := s.newJID()
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		data := newOmap("fun", "runner."+fun, "jid", jid, "user", user, "fun_args", funArgs)
		s.fire("salt/run/"+jid+"/new", data.Clone())
		ret, success := s.runRunner(fun, args, kwargs)
		data.Set("_stamp", stamp(time.Now()))
		data.Set("return", ret)
		data.Set("success", success)
		s.fire("salt/run/"+jid+"/ret", data)
	}()
	return newOmap("tag", "salt/run/"+jid, "jid", jid), nil
}

// runRunner implements the runner functions the simulator knows.
func (s *Master) runRunner(fun string, args []any, kwargs *omap) (any, bool) {
	switch fun {
	case "test.arg":
		return newOmap("args", args, "kwargs", kwargs), true
	case "jobs.list_jobs":
		out := &omap{}
		for _, p := range s.Publications() {
			out.Set(p.JID, newOmap("Function", p.Fun, "Arguments", p.Args, "Target", p.tgt,
				"Target-type", p.tgtType, "User", p.User, "StartTime", jidTime(p.JID)))
		}
		return out, true
	case "manage.present":
		return s.presentIDs(), true
	case "jobs.lookup_jid":
		jid := ""
		if len(args) > 0 {
			jid, _ = args[0].(string)
		}
		if v, ok := kwargs.Str("jid"); ok {
			jid = v
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		out := map[string]any{}
		for id, r := range s.returns[jid] {
			out[id] = r
		}
		return out, true
	}
	return fmt.Sprintf("'%s' is not available.", fun), false
}

// jidTime renders a JID as jobs.list_jobs' StartTime ("2026, Nov 29 15:46:06.042846").
func jidTime(jid string) string {
	t, err := time.Parse("20060102150405", jid[:min(14, len(jid))])
	if err != nil || len(jid) < 20 {
		return jid
	}
	return t.Format("2006, Jan 02 15:04:05") + "." + jid[14:20]
}

// wheel is ClearFuncs.wheel: synchronous; the reply carries the result.
func (s *Master) wheel(load *omap) (any, error) {
	user, denied, err := s.runnerWheelAuth(load, "wheel")
	if err != nil || denied != nil {
		return denied, err
	}
	jid := s.newJID()
	funV, err := need(load, "fun")
	if err != nil {
		return nil, err
	}
	load.Del("fun")
	fun, _ := funV.(string)
	tag := "salt/wheel/" + jid
	data := newOmap("fun", "wheel."+fun, "jid", jid, "tag", tag, "user", user)
	s.fire(tag+"/new", data)
	// the inner call fires its own pair of events under a second jid
	inner := s.newJID()
	innerData := newOmap("fun", "wheel."+fun, "jid", inner, "user", "UNKNOWN", "fun_args", []any{})
	s.fire("salt/wheel/"+inner+"/new", innerData.Clone())
	ret, success := s.runWheel(fun, load)
	innerData.Set("_stamp", stamp(time.Now()))
	innerData.Set("return", ret)
	innerData.Set("success", success)
	s.fire("salt/wheel/"+inner+"/ret", innerData)
	data.Set("return", ret)
	data.Set("success", success)
	s.fire(tag+"/ret", data)
	return newOmap("tag", tag, "data", data), nil
}

// runWheel implements key.list_all; the remaining load keys are the function's kwargs.
func (s *Master) runWheel(fun string, load *omap) (any, bool) {
	switch fun {
	case "key.list_all", "key.list":
		for _, k := range load.Keys {
			if k == "user" {
				return fmt.Sprintf("Exception occurred in wheel %s: TypeError: list_all() got an unexpected "+
					"keyword argument 'user'", fun), false
			}
		}
		ids := s.acceptedIDs()
		sort.Strings(ids)
		return newOmap("minions", ids, "minions_pre", []string{}, "minions_rejected", []string{},
			"minions_denied", []string{}, "local", append([]string(nil), s.cfg.wheelLocalKeys...)), true
	}
	return fmt.Sprintf("Exception occurred in wheel %s: KeyError: '%s'", fun, fun), false
}
