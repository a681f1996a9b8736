package salt

import (
	"fmt"
	"log/slog"
	"time"
)

// The credential holders below print and log without their secrets: fmt
// prints unexported fields verbatim (it never calls their String methods), so
// a caller's "%+v" of a Client, an Auth or a token source would otherwise
// show passwords, keys and tokens.

// String describes the client without its credentials.
func (c *Client) String() string {
	if c == nil {
		return "salt.Client(nil)"
	}
	return fmt.Sprintf("salt.Client{addr=%s://%s auth=%s}", c.ep.network, c.ep.address, authString(c.cfg.auth))
}

// GoString is String, for %#v.
func (c *Client) GoString() string { return c.String() }

// LogValue implements slog.LogValuer without credentials.
func (c *Client) LogValue() slog.Value {
	if c == nil {
		return slog.StringValue("salt.Client(nil)")
	}
	return slog.GroupValue(slog.String("addr", c.ep.network+"://"+c.ep.address),
		slog.String("auth", authString(c.cfg.auth)))
}

func authString(a Auth) string {
	if a == nil {
		return "none"
	}
	if s, ok := a.(fmt.Stringer); ok {
		return s.String()
	}
	return "REDACTED"
}

// String names the user and key file; the key is never read for printing.
func (a userKeyAuth) String() string { return "salt.UserKey{user=" + a.user + " file=" + a.path + "}" }

// GoString is String, for %#v.
func (a userKeyAuth) GoString() string { return a.String() }

// LogValue implements slog.LogValuer.
func (a userKeyAuth) LogValue() slog.Value { return slog.StringValue(a.String()) }

// String shows the backend and user, never the password.
func (a eauthAuth) String() string {
	return "salt.Eauth{backend=" + a.backend + " username=" + a.username + " password=REDACTED}"
}

// GoString is String, for %#v.
func (a eauthAuth) GoString() string { return a.String() }

// LogValue implements slog.LogValuer.
func (a eauthAuth) LogValue() slog.Value { return slog.StringValue(a.String()) }

// String never shows a token.
func (a tokenAuth) String() string { return "salt.TokenAuth{token=REDACTED}" }

// GoString is String, for %#v.
func (a tokenAuth) GoString() string { return a.String() }

// LogValue implements slog.LogValuer.
func (a tokenAuth) LogValue() slog.Value { return slog.StringValue(a.String()) }

// String never shows the token.
func (s staticToken) String() string { return "salt.staticToken{REDACTED}" }

// GoString is String, for %#v.
func (s staticToken) GoString() string { return s.String() }

// LogValue implements slog.LogValuer.
func (s staticToken) LogValue() slog.Value { return slog.StringValue(s.String()) }

// String shows the backend and user, never the password or the token.
func (s *RenewingTokenSource) String() string {
	if s == nil {
		return "salt.RenewingTokenSource(nil)"
	}
	return "salt.RenewingTokenSource{backend=" + s.backend + " username=" + s.user + " password=REDACTED}"
}

// GoString is String, for %#v.
func (s *RenewingTokenSource) GoString() string { return s.String() }

// LogValue implements slog.LogValuer.
func (s *RenewingTokenSource) LogValue() slog.Value { return slog.StringValue(s.String()) }

// String describes the token without revealing it.
func (t Token) String() string {
	return "salt.Token{name=" + t.Name + " eauth=" + t.Eauth + " expire=" + t.Expire.UTC().Format(time.RFC3339) + " token=REDACTED}"
}

// GoString is like String, for %#v.
func (t Token) GoString() string { return t.String() }

// LogValue implements slog.LogValuer without the token.
func (t Token) LogValue() slog.Value {
	return slog.GroupValue(slog.String("name", t.Name), slog.String("eauth", t.Eauth),
		slog.Time("expire", t.Expire), slog.String("token", "REDACTED"))
}
