package cli

import (
	"context"

	"github.com/oduflow/oduflow-go/salt"
)

// tokenClient exchanges the eauth password for a token once (salt.NewTokenSource renews it
// before it expires) and returns a client that authenticates with the token only, so that the
// password is not sent with every publication.
func (e *env) tokenClient(_ context.Context, opts []salt.Option) (*salt.Client, error) {
	g := e.g
	base, err := salt.NewClient(g.master, opts...)
	if err != nil {
		return nil, err
	}
	ts := salt.NewTokenSource(base, g.eauth, g.user, g.password)
	c, err := salt.NewClient(g.master, append(opts, salt.WithAuth(salt.TokenAuth(ts)))...)
	if err != nil {
		base.Close()
		return nil, err
	}
	e.closers = append(e.closers, base.Close)
	return c, nil
}
