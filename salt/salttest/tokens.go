package salttest

import (
	"crypto/rand"
	"encoding/hex"
	"time"
)

// lookupToken is LoadAuth.authenticate_token: the token must exist, not be expired (an expired
// one is deleted) and its eauth backend must still be configured.
func (s *Master) lookupToken(load *omap) (tokenData, bool) {
	v, _ := load.Get("token")
	tok, ok := v.(string)
	if !ok {
		return tokenData{}, false
	}
	t, ok := s.getTok(tok)
	if !ok || !s.backendConfigured(t.Eauth) {
		return tokenData{}, false
	}
	return t, true
}

func (s *Master) getTok(tok string) (tokenData, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.tokens[tok]
	if !ok {
		return tokenData{}, false
	}
	if !t.Expire.After(time.Now()) {
		delete(s.tokens, tok)
		return tokenData{}, false
	}
	return t, true
}

func tokenMap(t tokenData) *omap {
	return newOmap("start", floatTime(t.Start), "expire", floatTime(t.Expire), "name", t.Name,
		"eauth", t.Eauth, "token", t.Token)
}

// mkToken is ClearFuncs.mk_token: the token map, or "" when eauth fails.
func (s *Master) mkToken(load *omap) (any, error) {
	if !load.Has("eauth") || !s.authenticateEauth(load) {
		s.log.Warn(`Authentication failure of type "eauth" occurred.`)
		return "", nil
	}
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	now := time.Now()
	t := tokenData{Token: hex.EncodeToString(b), Name: mustStr(load, "username"), Eauth: mustStr(load, "eauth"),
		Start: now, Expire: now.Add(s.cfg.tokenExpire)}
	s.mu.Lock()
	s.tokens[t.Token] = t
	s.mu.Unlock()
	return tokenMap(t), nil
}

// getToken is ClearFuncs.get_token: false without "token", {} for an unknown or expired one.
func (s *Master) getToken(load *omap) (any, error) {
	v, ok := load.Get("token")
	if !ok {
		return false, nil
	}
	tok, _ := v.(string)
	t, ok := s.getTok(tok)
	if !ok {
		return &omap{}, nil
	}
	return tokenMap(t), nil
}

// Tokens returns the number of live tokens.
func (s *Master) Tokens() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.tokens)
}
