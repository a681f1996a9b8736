package salt

import (
	"context"

	"github.com/cockroachdb/errors"

	"github.com/oduflow/oduflow-go/internal/errmark"
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

// CheckAuth proves the client's credentials usable without publishing anything: a user key file is read
// and validated (ErrKeyFile); a token source returns its cached token, or logs in once (mk_token:
// ErrAuthentication for a wrong password, ErrNotSent when the master cannot be reached). It adds no round
// trip while a token is cached.
func (c *Client) CheckAuth(ctx context.Context) (err error) {
	defer errmark.Boundary(&err)
	_, err = c.authFor(ctx)
	return err
}

// addTopLevelAuth appends runner/wheel auth fields in the order Salt's
// clients send them. eauthOrder is the order of the three eauth fields.
func addTopLevelAuth(load *orderedMap, am authMaterial, withUser bool, eauthOrder []string) {
	switch am.kind {
	case authEauth:
		for _, k := range eauthOrder {
			switch k {
			case "eauth":
				load.Set("eauth", am.eauth)
			case "username":
				load.Set("username", am.username)
			case "password":
				load.Set("password", am.password)
			}
		}
	case authToken:
		load.Set("token", am.token)
	case authKey:
		if withUser {
			load.Set("user", am.user)
		}
		load.Set("key", am.key)
	}
}
