package salt

import "context"

// CheckAuth proves the client's credentials usable without publishing anything: a user key file is read
// and validated (ErrKeyFile); a token source returns its cached token, or logs in once (mk_token:
// ErrAuthentication for a wrong password, ErrNotSent when the master cannot be reached). It adds no round
// trip while a token is cached.
func (c *Client) CheckAuth(ctx context.Context) error {
	_, err := c.authFor(ctx)
	return err
}
