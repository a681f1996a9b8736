package salt

import (
	"context"

	"github.com/cockroachdb/errors"
)

// Auth is the credential used by Publish, Runner and Wheel. It is sealed:
// build one with UserKey, Eauth or TokenAuth.
type Auth interface {
	material(ctx context.Context) (authMaterial, error)
}

type authKind int

const (
	authNone authKind = iota
	authKey
	authEauth
	authToken
)

// authMaterial is what one request carries. It never leaves the package and
// is never logged.
type authMaterial struct {
	kind     authKind
	user     string // user-key auth: the "user" field
	key      string // user-key auth: the key; "" for eauth/token publishes
	eauth    string
	username string
	password string
	token    string
}

type userKeyAuth struct {
	user, path string
	cache      *keyCache // nil: read the file every time
}

// UserKey authenticates with the master's per-user key file
// (<cachedir>/.<user>_key, e.g. /var/cache/salt/master/.root_key). The file is
// checked again for every request, because the master writes a new key at every
// start: the key read last is reused only while the file is provably the same
// file (an lstat finds the same inode, mode, size and times), else the file is
// read again. The file must be a regular file (no symlink) without group-write or
// any "other" permission bits. user is sent as the "user" field; "root" (or
// the master's user) gets full access.
func UserKey(user, keyFile string) Auth {
	return userKeyAuth{user: user, path: keyFile, cache: &keyCache{}}
}

func (a userKeyAuth) material(context.Context) (authMaterial, error) {
	key, err := a.cache.read(a.path)
	if err != nil {
		return authMaterial{}, err
	}
	return authMaterial{kind: authKey, user: a.user, key: key}, nil
}

type eauthAuth struct{ backend, username, password string }

// Eauth authenticates every request with an external auth backend (pam,
// file, ldap, ...). Each request carries the password in clear text, and a
// rejected publish makes the master fire the whole request, password included,
// on its event bus (salt/job/<jid>/error): prefer TokenAuth.
func Eauth(backend, username, password string) Auth {
	return eauthAuth{backend: backend, username: username, password: password}
}

func (a eauthAuth) material(context.Context) (authMaterial, error) {
	if a.backend == "" || a.username == "" {
		return authMaterial{}, errors.Wrap(ErrInvalidRequest, "eauth backend and username are required")
	}
	return authMaterial{kind: authEauth, eauth: a.backend, username: a.username, password: a.password}, nil
}

// TokenSource supplies eauth tokens (see NewTokenSource).
type TokenSource interface {
	Token(ctx context.Context) (string, error)
}

type tokenAuth struct{ src TokenSource }

// TokenAuth authenticates every request with a token from src (mk_token).
func TokenAuth(src TokenSource) Auth { return tokenAuth{src: src} }

func (a tokenAuth) material(ctx context.Context) (authMaterial, error) {
	if a.src == nil {
		return authMaterial{}, errors.Wrap(ErrInvalidRequest, "nil token source")
	}
	t, err := a.src.Token(ctx)
	if err != nil {
		return authMaterial{}, errors.Wrap(err, "obtaining token")
	}
	if t == "" {
		return authMaterial{}, errors.Wrap(ErrAuthentication, "token source returned an empty token")
	}
	return authMaterial{kind: authToken, token: t}, nil
}

// staticToken is a TokenSource for a fixed token.
type staticToken string

func (s staticToken) Token(context.Context) (string, error) { return string(s), nil }

// authFor returns the material of the client's Auth, or an error that wraps
// ErrNotSent.
func (c *Client) authFor(ctx context.Context) (authMaterial, error) {
	if c.cfg.auth == nil {
		return authMaterial{}, notSent(errors.Wrap(ErrInvalidRequest, "no credentials: use WithAuth"), "auth")
	}
	m, err := c.cfg.auth.material(ctx)
	if err != nil {
		return authMaterial{}, notSent(err, "auth")
	}
	return m, nil
}
