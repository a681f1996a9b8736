package salt

import (
	"context"
	"log/slog"
	"math"
	"sort"
	"time"

	"github.com/cockroachdb/errors"
)

func sortStrings(s []string) { sort.Strings(s) }

// AsyncResult is the reply to runner: the runner runs in the background and
// its result is fired on the event bus as <Tag>/ret (salt/run/<jid>/ret).
type AsyncResult struct {
	Tag string
	JID JID
}

// WheelResult is the synchronous reply to wheel. A failing wheel function is
// not an error: Success is false and Return holds Salt's exception text.
type WheelResult struct {
	Tag     string
	JID     JID
	Return  any
	Success bool
	Data    map[string]any
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

// runnerLoad: fun, kwarg{kwarg, arg}, <auth>, cmd (RunnerClient order).
func runnerLoad(fun string, args []any, kwargs map[string]any, am authMaterial) (*orderedMap, error) {
	if fun == "" {
		return nil, errors.Wrap(ErrInvalidRequest, "fun is required")
	}
	kw := newOrderedMap()
	for _, k := range sortedKeys(kwargs) {
		kw.Set(k, kwargs[k])
	}
	if args == nil {
		args = []any{}
	}
	load := newOrderedMap().Set("fun", fun).
		Set("kwarg", newOrderedMap().Set("kwarg", kw).Set("arg", args))
	addTopLevelAuth(load, am, true, []string{"username", "password", "eauth"})
	load.Set("cmd", "runner")
	return load, nil
}

// Runner starts a runner function asynchronously (e.g. "jobs.list_jobs").
// The reply only says it started; the result is on the event bus.
func (c *Client) Runner(ctx context.Context, fun string, args []any, kwargs map[string]any) (*AsyncResult, error) {
	am, err := c.authFor(ctx)
	if err != nil {
		return nil, err
	}
	load, err := runnerLoad(fun, args, kwargs, am)
	if err != nil {
		return nil, notSent(err, "building runner")
	}
	v, err := c.do(ctx, "runner", load)
	if err != nil {
		return nil, err
	}
	if err := replyError(v); err != nil {
		return nil, err
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, malformed("runner reply is not a map", true)
	}
	tag, _ := m["tag"].(string)
	js, _ := m["jid"].(string)
	jid, err := ParseJID(js)
	if err != nil || tag == "" {
		return nil, malformed("runner reply without tag/jid", true)
	}
	c.cfg.logger.LogAttrs(ctx, slog.LevelInfo, "salt runner", slog.String("fun", fun), slog.String("jid", js))
	return &AsyncResult{Tag: tag, JID: jid}, nil
}

// wheelLoad: fun, <kwargs, sorted>, <auth>, cmd. With user-key auth no
// "user" is sent: the master would pass it to the wheel function.
func wheelLoad(fun string, kwargs map[string]any, am authMaterial) (*orderedMap, error) {
	if fun == "" {
		return nil, errors.Wrap(ErrInvalidRequest, "fun is required")
	}
	load := newOrderedMap().Set("fun", fun)
	for _, k := range sortedKeys(kwargs) {
		switch k {
		case "fun", "cmd", "eauth", "username", "password", "token", "key", "user":
			return nil, errors.Wrapf(ErrInvalidRequest, "wheel kwarg %q is reserved", errors.Safe(k))
		}
		load.Set(k, kwargs[k])
	}
	addTopLevelAuth(load, am, false, []string{"eauth", "username", "password"})
	load.Set("cmd", "wheel")
	return load, nil
}

// Wheel runs a wheel function synchronously (e.g. "key.list_all").
func (c *Client) Wheel(ctx context.Context, fun string, kwargs map[string]any) (*WheelResult, error) {
	am, err := c.authFor(ctx)
	if err != nil {
		return nil, err
	}
	load, err := wheelLoad(fun, kwargs, am)
	if err != nil {
		return nil, notSent(err, "building wheel")
	}
	v, err := c.do(ctx, "wheel", load)
	if err != nil {
		return nil, err
	}
	return parseWheelReply(v)
}

func parseWheelReply(v any) (*WheelResult, error) {
	if err := replyError(v); err != nil {
		return nil, err
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, malformed("wheel reply is not a map", true)
	}
	data, ok := m["data"].(map[string]any)
	if !ok {
		return nil, malformed("wheel reply without data", true)
	}
	tag, _ := m["tag"].(string)
	res := &WheelResult{Tag: tag, Data: data, Return: data["return"]}
	res.Success, _ = data["success"].(bool)
	if js, ok := data["jid"].(string); ok {
		if jid, err := ParseJID(js); err == nil {
			res.JID = jid
		}
	}
	return res, nil
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
func (c *Client) MkToken(ctx context.Context, backend, username, password string) (*Token, error) {
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
func (c *Client) GetToken(ctx context.Context, token string) (*Token, error) {
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

// pingLoad is {cmd: ping} plus optional extra fields (echoed by the master).
func pingLoad(extra *orderedMap) *orderedMap {
	load := newOrderedMap().Set("cmd", "ping")
	if extra != nil {
		for _, k := range extra.keys {
			if k != "cmd" {
				load.Set(k, extra.vals[k])
			}
		}
	}
	return load
}

// Ping sends the unauthenticated {cmd: ping} readiness probe; the master
// echoes the load. A nil error means the master's workers are up and accept
// this client's envelope version.
func (c *Client) Ping(ctx context.Context) error {
	v, err := c.do(ctx, "ping", pingLoad(nil))
	if err != nil {
		return err
	}
	if err := replyError(v); err != nil {
		return err
	}
	m, ok := v.(map[string]any)
	if !ok || m["cmd"] != "ping" {
		return malformed("ping reply does not echo the request", false)
	}
	return nil
}
