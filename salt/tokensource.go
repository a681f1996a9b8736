package salt

import (
	"context"
	"sync"
	"time"

	"github.com/cockroachdb/errors"
)

// TokenSourceOption configures a RenewingTokenSource.
type TokenSourceOption func(*RenewingTokenSource)

// WithRenewBefore renews the token when less than d of its lifetime is left
// (default 5 minutes, at most half the token's lifetime).
func WithRenewBefore(d time.Duration) TokenSourceOption {
	return func(s *RenewingTokenSource) { s.renewBefore = d }
}

// WithTokenClock replaces time.Now (tests).
func WithTokenClock(now func() time.Time) TokenSourceOption {
	return func(s *RenewingTokenSource) { s.now = now }
}

// RenewingTokenSource logs in with mk_token on first use, caches the token
// and logs in again shortly before it expires. It is safe for concurrent use;
// concurrent callers share one mk_token call. The password is kept in memory
// for renewals and never logged.
type RenewingTokenSource struct {
	c                  *Client
	backend, user, pwd string
	renewBefore        time.Duration
	now                func() time.Time

	mu  sync.Mutex
	tok *Token
}

// NewTokenSource returns a token source that uses c (c needs no WithAuth).
func NewTokenSource(c *Client, backend, username, password string, opts ...TokenSourceOption) *RenewingTokenSource {
	s := &RenewingTokenSource{c: c, backend: backend, user: username, pwd: password,
		renewBefore: 5 * time.Minute, now: time.Now}
	for _, o := range opts {
		o(s)
	}
	return s
}

// Token returns a valid token, calling mk_token when there is none yet or
// the current one is about to expire.
func (s *RenewingTokenSource) Token(ctx context.Context) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.tok != nil && !s.needsRenewal(s.tok) {
		return s.tok.Token, nil
	}
	t, err := s.c.MkToken(ctx, s.backend, s.user, s.pwd)
	if err != nil {
		return "", errors.Wrap(err, "renewing eauth token")
	}
	s.tok = t
	return t.Token, nil
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
