package oduflowenv

import (
	"context"
	"errors"

	"github.com/oduflow/oduflow-go/salt"
)

// Client opens a Salt client with the configured authentication: the user key when a key file is named
// (preferred: nothing secret is published), else an eauth token obtained once from the password
// (salt.NewTokenSource renews it before it expires; the password is not sent with every publication).
// closeAll closes the client and what it opened on its behalf. A client that cannot be built (a malformed
// address) is an ErrUsage error naming the master setting.
func (s Settings) Client(_ context.Context, opts ...salt.ClientOption) (c *salt.Client, closeAll func() error, err error) {
	if s.KeyFile != "" {
		c, err := salt.NewClient(s.Master, append(opts, salt.WithAuth(salt.UserKey(KeyUser(s.KeyFile), s.KeyFile)))...)
		if err != nil {
			return nil, nil, configf(err, "%s %q", s.name("--master", "ODUFLOW_SALT_MASTER"), s.Master)
		}
		return c, c.Close, nil
	}
	base, err := salt.NewClient(s.Master, opts...)
	if err != nil {
		return nil, nil, configf(err, "%s %q", s.name("--master", "ODUFLOW_SALT_MASTER"), s.Master)
	}
	ts := salt.NewTokenSource(base, s.Eauth, s.User, s.Password)
	c, err = salt.NewClient(s.Master, append(opts, salt.WithAuth(salt.TokenAuth(ts)))...)
	if err != nil {
		base.Close()
		return nil, nil, configf(err, "%s %q", s.name("--master", "ODUFLOW_SALT_MASTER"), s.Master)
	}
	return c, func() error { return errors.Join(c.Close(), base.Close()) }, nil
}
