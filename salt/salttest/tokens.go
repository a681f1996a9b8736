package salttest

import (
	"crypto/rand"
	"encoding/hex"
	"time"
)

// lookupToken is LoadAuth.authenticate_token: the token must exist, not be expired (an expired
// one is deleted) and its eauth backend must still be configured.
func (s *Sim) lookupToken(load *omap) (TokenData, bool) {
	v, _ := load.get("token")
	tok, ok := v.(string)
	if !ok {
		return TokenData{}, false
	}
	t, ok := s.getTok(tok)
	if !ok || !s.backendConfigured(t.Eauth) {
		return TokenData{}, false
	}
	return t, true
}

func (s *Sim) getTok(tok string) (TokenData, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.tokens[tok]
	if !ok {
		return TokenData{}, false
	}
	if !t.Expire.After(time.Now()) {
		delete(s.tokens, tok)
		return TokenData{}, false
	}
	return t, true
}

func tokenMap(t TokenData) *omap {
	return newOmap("start", floatTime(t.Start), "expire", floatTime(t.Expire), "name", t.Name,
		"eauth", t.Eauth, "token", t.Token)
}

// mkToken is ClearFuncs.mk_token: the token map, or "" when eauth fails.
func (s *Sim) mkToken(load *omap) (any, error) {
	if !load.has("eauth") || !s.authenticateEauth(load) {
		s.log.Warn(`Authentication failure of type "eauth" occurred.`)
		return "", nil
	}
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	now := time.Now()
	t := TokenData{Token: hex.EncodeToString(b), Name: mustStr(load, "username"), Eauth: mustStr(load, "eauth"),
		Start: now, Expire: now.Add(s.cfg.tokenExpire)}
	s.mu.Lock()
	s.tokens[t.Token] = t
	s.mu.Unlock()
	return tokenMap(t), nil
}

// getToken is ClearFuncs.get_token: false without "token", {} for an unknown or expired one.
func (s *Sim) getToken(load *omap) (any, error) {
	v, ok := load.get("token")
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
func (s *Sim) Tokens() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.tokens)
}
