package salt

import (
	"context"
	"log/slog"

	"github.com/cockroachdb/errors"

	"github.com/oduflow/oduflow-go/internal/errmark"
)

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
func (c *Client) Runner(ctx context.Context, fun string, args []any, kwargs map[string]any) (_ *AsyncResult, err error) {
	defer errmark.Boundary(&err)
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
func (c *Client) Wheel(ctx context.Context, fun string, kwargs map[string]any) (_ *WheelResult, err error) {
	defer errmark.Boundary(&err)
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

// pingLoad is {cmd: ping} plus optional extra fields (echoed by the master).
func pingLoad(extra *orderedMap) *orderedMap {
	load := newOrderedMap().Set("cmd", "ping")
	if extra != nil {
		for i, k := range extra.Keys {
			if ks, ok := k.(string); ok && ks != "cmd" {
				load.Set(ks, extra.Vals[i])
			}
		}
	}
	return load
}

// Ping sends the unauthenticated {cmd: ping} readiness probe; the master
// echoes the load. A nil error means the master's workers are up and accept
// this client's envelope version.
func (c *Client) Ping(ctx context.Context) (err error) {
	defer errmark.Boundary(&err)
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
