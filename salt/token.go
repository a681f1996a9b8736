package salt

import (
	"context"
	"math"
	"sync"
	"time"

	"github.com/cockroachdb/errors"

	"github.com/oduflow/oduflow-go/internal/errmark"
)

// RenewingTokenSource logs in with mk_token on first use, caches the token
// and logs in again shortly before it expires. It is safe for concurrent use;
// concurrent callers share one mk_token call, and a caller waiting for
// another's login gives up when its own context ends. The password is kept in
// memory for renewals and never logged or printed.
type RenewingTokenSource struct {
	c                  *Client
	backend, user, pwd string
	renewBefore        time.Duration
	now                func() time.Time

	login chan struct{} // one slot: held for the duration of a mk_token call
	mu    sync.Mutex    // guards tok; never held during I/O
	tok   *Token
}

// NewTokenSource returns a token source that uses c (c needs no WithAuth).
func NewTokenSource(c *Client, backend, username, password string, opts ...TokenOption) *RenewingTokenSource {
	set := settings{renewBefore: 5 * time.Minute, now: time.Now}
	applyTokenOptions(&set, opts)
	return &RenewingTokenSource{c: c, backend: backend, user: username, pwd: password,
		renewBefore: set.renewBefore, now: set.now, login: make(chan struct{}, 1)}
}

// Token returns a valid token, calling mk_token when there is none yet or
// the current one is about to expire.
func (s *RenewingTokenSource) Token(ctx context.Context) (_ string, err error) {
	defer errmark.Boundary(&err)
	if t, ok := s.valid(); ok {
		return t, nil
	}
	select {
	case s.login <- struct{}{}:
	case <-ctx.Done():
		return "", errors.Wrap(ctx.Err(), "waiting for an eauth login in progress")
	}
	defer func() { <-s.login }()
	if t, ok := s.valid(); ok { // another caller logged in while we waited
		return t, nil
	}
	t, err := s.c.MkToken(ctx, s.backend, s.user, s.pwd)
	if err != nil {
		return "", errors.Wrap(err, "renewing eauth token")
	}
	s.mu.Lock()
	s.tok = t
	s.mu.Unlock()
	return t.Token, nil
}

// valid returns the cached token when it needs no renewal.
func (s *RenewingTokenSource) valid() (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.tok != nil && !s.needsRenewal(s.tok) {
		return s.tok.Token, true
	}
	return "", false
}

// Current returns the cached token (nil before the first Token call). Use it
// for its expiry; the Token field is the secret itself.
func (s *RenewingTokenSource) Current() *Token {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.tok == nil {
		return nil
	}
	t := *s.tok
	return &t
}

// Invalidate drops the cached token, so that the next Token call logs in
// again (for instance after ErrAuthentication on a request made with it).
func (s *RenewingTokenSource) Invalidate() {
	s.mu.Lock()
	s.tok = nil
	s.mu.Unlock()
}

func (s *RenewingTokenSource) needsRenewal(t *Token) bool {
	if t.Expire.IsZero() {
		return false
	}
	before := s.renewBefore
	if !t.Start.IsZero() {
		if half := t.Expire.Sub(t.Start) / 2; half < before {
			before = half
		}
	}
	return !s.now().Before(t.Expire.Add(-before))
}

// Token is an eauth token from mk_token/get_token. Its String and LogValue
// never show the token itself.
type Token struct {
	Token  string
	Name   string
	Eauth  string
	Start  time.Time
	Expire time.Time
}

func parseToken(v any) (*Token, bool) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, false
	}
	tok, _ := m["token"].(string)
	if tok == "" {
		return nil, false
	}
	t := &Token{Token: tok}
	t.Name, _ = m["name"].(string)
	t.Eauth, _ = m["eauth"].(string)
	t.Start = epoch(m["start"])
	t.Expire = epoch(m["expire"])
	return t, true
}

func epoch(v any) time.Time {
	var f float64
	switch x := v.(type) {
	case float64:
		f = x
	case int64:
		f = float64(x)
	default:
		return time.Time{}
	}
	sec, frac := math.Modf(f)
	return time.Unix(int64(sec), int64(frac*1e9)).UTC()
}

// MkToken logs in with eauth and returns a token (default lifetime 12 h).
// A refused login (the master replies "") is ErrAuthentication.
func (c *Client) MkToken(ctx context.Context, backend, username, password string) (_ *Token, err error) {
	defer errmark.Boundary(&err)
	if backend == "" || username == "" {
		return nil, notSent(errors.Wrap(ErrInvalidRequest, "eauth backend and username are required"), "mk_token")
	}
	load := newOrderedMap().Set("eauth", backend).Set("username", username).
		Set("password", password).Set("cmd", "mk_token")
	v, err := c.do(ctx, "mk_token", load)
	if err != nil {
		return nil, err
	}
	if s, ok := v.(string); ok && s == "" {
		return nil, errors.Wrap(ErrAuthentication, "mk_token refused")
	}
	if err := replyError(v); err != nil {
		return nil, err
	}
	t, ok := parseToken(v)
	if !ok {
		return nil, malformed("mk_token reply is not a token", false)
	}
	return t, nil
}

// GetToken returns the master's data for token. An unknown or expired token
// is ErrAuthentication.
func (c *Client) GetToken(ctx context.Context, token string) (_ *Token, err error) {
	defer errmark.Boundary(&err)
	if token == "" {
		return nil, notSent(errors.Wrap(ErrInvalidRequest, "empty token"), "get_token")
	}
	load := newOrderedMap().Set("token", token).Set("cmd", "get_token")
	v, err := c.do(ctx, "get_token", load)
	if err != nil {
		return nil, err
	}
	if err := replyError(v); err != nil {
		return nil, err
	}
	if m, ok := v.(map[string]any); ok && len(m) == 0 {
		return nil, errors.Wrap(ErrAuthentication, "token unknown or expired")
	}
	t, ok := parseToken(v)
	if !ok {
		return nil, malformed("get_token reply is not a token", false)
	}
	return t, nil
}
