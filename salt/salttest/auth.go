package salttest

import (
	"crypto/subtle"
	"regexp"
	"strings"
)

// authKind is Salt's ClearFuncs._prep_auth_info: token, then eauth, then user (key).
type authKind struct {
	kind      string // "token", "eauth", "user"
	errName   string
	sensitive []string
}

func prepAuthInfo(x *omap) authKind {
	switch {
	case x.Has("token"):
		return authKind{"token", "TokenAuthenticationError", []string{"token"}}
	case x.Has("eauth"):
		return authKind{"eauth", "EauthAuthenticationError", []string{"username", "password", "eauth", "token"}}
	}
	return authKind{"user", "UserAuthenticationError", nil}
}

// authCheck is LoadAuth.check_authentication's result.
type authCheck struct {
	username string
	authList []ACLEntry
	errMap   *omap // {name, message} on failure
}

func errMap(name, message string) *omap { return newOmap("name", name, "message", message) }

// checkAuthentication authenticates load (the publish kwargs, or the whole runner/wheel load)
// by kind. For "user" it pops "key" from load, as Salt does.
func (s *Master) checkAuthentication(load *omap, kind string, showUsername bool) authCheck {
	username := "UNKNOWN"
	if u, ok := load.Str("username"); ok {
		username = u
	}
	res := authCheck{username: username}
	switch kind {
	case "token":
		tok, ok := s.lookupToken(load)
		if !ok {
			res.errMap = errMap("TokenAuthenticationError", `Authentication failure of type "token" occurred.`)
			return res
		}
		res.username = tok.Name
		res.authList = s.authList(tok.Eauth, tok.Name)
	case "eauth":
		if !s.authenticateEauth(load) {
			res.errMap = errMap("EauthAuthenticationError",
				`Authentication failure of type "eauth" occurred for user `+username+`.`)
			return res
		}
		res.authList = s.authList(mustStr(load, "eauth"), username)
	default:
		if !s.authenticateKey(load) {
			msg := `Authentication failure of type "user" occurred`
			if showUsername {
				msg += " for user " + username + "."
			}
			res.errMap = errMap("UserAuthenticationError", msg)
		}
	}
	return res
}

func mustStr(m *omap, k string) string {
	v, _ := m.Str(k)
	return v
}

// authenticateKey is LoadAuth.authenticate_key for a master running as root whose only key is
// the root key: root (or a sudo_ user, or any user presenting the root key) gets full access.
func (s *Master) authenticateKey(load *omap) bool {
	v, ok := load.Get("key")
	load.Del("key")
	if !ok {
		return false
	}
	key, isStr := v.(string)
	root := s.currentRootKey()
	if !isStr || subtle.ConstantTimeCompare([]byte(key), []byte(root)) != 1 {
		return false
	}
	return true
}

// authenticateEauth checks eauth/username/password against the configured users.
func (s *Master) authenticateEauth(load *omap) bool {
	backend, ok1 := load.Str("eauth")
	user, ok2 := load.Str("username")
	pw, ok3 := load.Str("password")
	good := false
	if ok1 && ok2 && ok3 {
		for _, u := range s.cfg.users {
			if u.backend != backend || (u.user != user && u.user != "*") {
				continue
			}
			if backend == "auto" || subtle.ConstantTimeCompare([]byte(u.password), []byte(pw)) == 1 {
				good = true
				break
			}
		}
	}
	return good
}

func (s *Master) backendConfigured(backend string) bool {
	for _, u := range s.cfg.users {
		if u.backend == backend {
			return true
		}
	}
	return false
}

// authList is get_auth_list: the entries of users named exactly, else those of "*".
func (s *Master) authList(backend, user string) []ACLEntry {
	var named, star []ACLEntry
	for _, u := range s.cfg.users {
		if u.backend != backend {
			continue
		}
		switch u.user {
		case user:
			named = append(named, u.acl...)
		case "*":
			star = append(star, u.acl...)
		}
	}
	if len(named) > 0 {
		return named
	}
	return star
}

// matchCheck is re.match(regex, fun): a regex anchored at the start only.
func matchCheck(regex, fun string) bool {
	re, err := regexp.Compile(`^(?:` + regex + `)`)
	if err != nil {
		return false
	}
	return re.MatchString(fun)
}

// publishAuthorized is CkMinions.auth_check for a single function, with saltutil.find_job
// always allowed.
func (s *Master) publishAuthorized(acl []ACLEntry, fun string, minions []string) bool {
	if fun == "saltutil.find_job" {
		return true
	}
	allowed := map[string]bool{}
	perMinion := map[string][]string{}
	for _, e := range acl {
		if e.Target == "" {
			if e.Fun != "" && matchCheck(e.Fun, fun) {
				return true
			}
			continue
		}
		matched, _ := s.checkMinions(e.Target, "compound")
		for _, m := range matched {
			allowed[m] = true
			perMinion[m] = append(perMinion[m], e.Funs...)
		}
	}
	for _, m := range minions {
		if !allowed[m] {
			return false
		}
	}
	for _, m := range minions {
		ok := false
		for _, f := range perMinion[m] {
			if matchCheck(f, fun) {
				ok = true
				break
			}
		}
		if !ok {
			return false
		}
	}
	return true
}

// specCheck is CkMinions.spec_check for runner and wheel ("form"): it returns ok, or an error
// map for a function name that is not "module.function".
func specCheck(acl []ACLEntry, fun, form string) (bool, *omap) {
	if len(acl) == 0 {
		return false, nil
	}
	comps := strings.Split(fun, ".")
	if len(comps) != 2 {
		return false, errMap("SaltInvocationError", "A command invocation error occurred: Check syntax.")
	}
	mod, fn := comps[0], comps[1]
	for _, e := range acl {
		if e.Target == "" {
			if strings.HasPrefix(e.Fun, "@") {
				spec := e.Fun[1:]
				if spec == mod || spec == form || e.Fun == "@"+form+"s" {
					return true, nil
				}
			}
			continue
		}
		if !strings.HasPrefix(e.Target, "@") {
			continue
		}
		spec := e.Target[1:]
		for _, f := range e.Funs {
			if spec == mod && matchCheck(f, fn) {
				return true, nil
			}
			if (spec == form || e.Target == "@"+form+"s") && matchCheck(f, fun) {
				return true, nil
			}
		}
	}
	return false, nil
}

// blacklisted is publisher_acl_blacklist: user or function matching a listed regex.
func (s *Master) blacklisted(user, fun string) bool {
	for _, r := range s.cfg.blacklistUsers {
		if matchCheck(r, user) {
			return true
		}
	}
	for _, r := range s.cfg.blacklistFuns {
		if matchCheck(r, fun) {
			return true
		}
	}
	return false
}
