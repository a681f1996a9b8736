package salt

import (
	"context"
	"sync"
	"time"

	"github.com/cockroachdb/errors"
)

// WithRenewBefore makes NewTokenSource's source renew the token when less
// than d of its lifetime is left (default 5 minutes, at most half the token's
// lifetime).
func WithRenewBefore(d time.Duration) Option { return func(s *settings) { s.renewBefore = d } }

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
func NewTokenSource(c *Client, backend, username, password string, opts ...Option) *RenewingTokenSource {
	set := settings{renewBefore: 5 * time.Minute, now: time.Now}
	applyOptions(&set, opts)
	return &RenewingTokenSource{c: c, backend: backend, user: username, pwd: password,
		renewBefore: set.renewBefore, now: set.now, login: make(chan struct{}, 1)}
}

// Token returns a valid token, calling mk_token when there is none yet or
// the current one is about to expire.
func (s *RenewingTokenSource) Token(ctx context.Context) (string, error) {
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
