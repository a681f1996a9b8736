package salt

import (
	"context"
	"fmt"
	"log/slog"
	"sort"
	"time"

	"github.com/cockroachdb/errors"

	"github.com/oduflow/oduflow-go/internal/errmark"
	"github.com/oduflow/oduflow-go/internal/salttrace"
)

// targetType is Salt's tgt_type.
type targetType = string

// Target types of the constructors; see Target for the others.
const (
	targetList targetType = "list"
	targetGlob targetType = "glob"
)

// Target selects minions. Type is Salt's tgt_type. List targets ("list") use
// List; all other types use Expr: "glob", "compound", "grain", "pillar", ...
// work as in Salt, e.g. Target{Type: "compound", Expr: "G@os:Debian and web*"}.
type Target struct {
	Type string
	List []string
	Expr string
}

// ListTarget targets exactly the given minion ids.
func ListTarget(ids ...string) Target {
	return Target{Type: targetList, List: append([]string(nil), ids...)}
}

// GlobTarget targets minions whose id matches the shell glob expr.
func GlobTarget(expr string) Target { return Target{Type: targetGlob, Expr: expr} }

func (t Target) validate() error {
	if t.Type == "" {
		return errors.Wrap(ErrInvalidRequest, "target type is required")
	}
	if t.Type == targetList {
		if len(t.List) == 0 {
			return errors.Wrap(ErrInvalidRequest, "list target without ids")
		}
		for _, id := range t.List {
			if id == "" {
				return errors.Wrap(ErrInvalidRequest, "empty minion id in list target")
			}
		}
		return nil
	}
	if t.Expr == "" {
		return errors.Wrap(ErrInvalidRequest, "empty target expression")
	}
	return nil
}

func (t Target) tgt() any {
	if t.Type == targetList {
		return append([]string(nil), t.List...)
	}
	return t.Expr
}

// PublishRequest is one publish command.
type PublishRequest struct {
	Target   Target
	Fun      string
	Args     []any          // positional
	Kwargs   map[string]any // appended to arg as {"__kwarg__": true, k: v...} (sorted keys); nil = none
	JID      JID            // preassigned; "" lets the master choose
	Timeout  int            // seconds, the "timeout" field (LocalClient sends 5); 0 sends 5
	Metadata map[string]any // kwargs.metadata, echoed in every return; optional
	Returner string         // the "ret" field: returners the minions also send their return to ("" = none)
}

// PublishResult is the master's acknowledgement of a publish.
type PublishResult struct {
	JID     JID
	Minions []string // the master's guess of the matching minions (accepted keys)
	Missing []string // ids of a list target without an accepted key
}

// publishLoad builds the load exactly as Salt's LocalClient orders it:
// cmd, tgt, fun, arg, key, tgt_type, ret, timeout, jid, [kwargs], user.
func publishLoad(req PublishRequest, am authMaterial, osUser string) (*orderedMap, error) {
	if err := req.Target.validate(); err != nil {
		return nil, err
	}
	if req.Fun == "" {
		return nil, errors.Wrap(ErrInvalidRequest, "fun is required")
	}
	if req.JID != "" {
		if _, err := ParseJID(string(req.JID)); err != nil {
			return nil, errmark.Mark(err, ErrInvalidRequest)
		}
	}
	args := make([]any, 0, len(req.Args)+1)
	args = append(args, req.Args...)
	if req.Kwargs != nil {
		kw := newOrderedMapCap(len(req.Kwargs)+1).Set("__kwarg__", true)
		for _, k := range sortedKeys(req.Kwargs) {
			if k == "__kwarg__" {
				continue
			}
			kw.Set(k, req.Kwargs[k])
		}
		args = append(args, kw)
	}
	timeout := req.Timeout
	if timeout <= 0 {
		timeout = 5
	}
	load := newOrderedMapCap(11).
		Set("cmd", "publish").
		Set("tgt", req.Target.tgt()).
		Set("fun", req.Fun).
		Set("arg", args).
		Set("key", am.key).
		Set("tgt_type", string(req.Target.Type)).
		Set("ret", req.Returner).
		Set("timeout", timeout).
		Set("jid", string(req.JID))
	kwargs := newOrderedMap()
	switch am.kind {
	case authEauth:
		kwargs.Set("eauth", am.eauth).Set("username", am.username).Set("password", am.password)
	case authToken:
		kwargs.Set("token", am.token)
	}
	if req.Metadata != nil {
		kwargs.Set("metadata", req.Metadata)
	}
	if kwargs.Len() > 0 {
		load.Set("kwargs", kwargs)
	}
	user := osUser
	if am.kind == authKey {
		user = am.user
	}
	load.Set("user", user)
	return load, nil
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Publish sends one publish command. It is never retried: see ErrNotSent and
// ErrOutcomeUnknown. Subscribe to the event bus (SubscribeEvents) before
// publishing: returns are only ever delivered there, and the bus has no replay.
//
// An acknowledgement that does not match the request (another JID than the
// preassigned one; for a list target, minions and missing that are not exactly
// the target) is not trusted: it fails with ErrOutcomeUnknown.
//
// Errors (test with errors.Is / errors.As): ErrNotSent, ErrOutcomeUnknown,
// ErrNoMinions, ErrAuthentication, ErrAuthorization
// (*MasterError), ErrBadLoad, ErrMasterException, ErrMalformedReply,
// ErrLimitExceeded, ErrInvalidRequest. IsNotPublished and IsOutcomeUnknown
// sort them into the two cases that matter.
func (c *Client) Publish(ctx context.Context, req PublishRequest) (_ *PublishResult, err error) {
	defer errmark.Boundary(&err)
	tr := salttrace.From(ctx)
	tr.Mark(salttrace.Start)
	am, err := c.authFor(ctx)
	if err != nil {
		return nil, err
	}
	tr.Mark(salttrace.Authed)
	load, err := publishLoad(req, am, c.cfg.osUser)
	if err != nil {
		return nil, notSent(err, "building publish")
	}
	start := time.Now()
	v, err := c.do(ctx, "publish", load)
	if err != nil {
		return nil, err
	}
	res, err := parsePublishReply(v)
	if err == nil {
		err = checkPublishAck(req, res)
	}
	c.cfg.logger.LogAttrs(ctx, slog.LevelInfo, "salt publish",
		slog.String("fun", req.Fun), slog.String("tgt_type", string(req.Target.Type)),
		slog.String("jid", string(req.JID)), slog.Duration("elapsed", time.Since(start)),
		slog.Bool("ok", err == nil))
	if err != nil {
		return nil, err
	}
	tr.Mark(salttrace.Done)
	return res, nil
}

// parsePublishReply interprets a decoded publish reply.
func parsePublishReply(v any) (*PublishResult, error) {
	if err := replyError(v); err != nil {
		return nil, err
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, malformed("publish reply is not a map", true)
	}
	load, ok := m["load"].(map[string]any)
	if !ok {
		return nil, malformed("publish reply without load", true)
	}
	jidv, hasJID := load["jid"]
	if !hasJID || jidv == nil {
		msg, _ := load["error"].(string)
		if !hasJID && msg != "" {
			// "Master failed to assign jid": nothing was published.
			return nil, masterError("JIDError", msg)
		}
		if !hasJID {
			return nil, malformed("publish reply without jid", true)
		}
		return nil, errors.WithStack(&noMinionsError{Message: msg})
	}
	js, ok := jidv.(string)
	if !ok {
		return nil, malformed("publish reply jid is not a string", true)
	}
	jid, err := ParseJID(js)
	if err != nil {
		return nil, errmark.Mark(errors.Wrap(err, "publish reply"), ErrOutcomeUnknown)
	}
	minions, ok1 := stringList(load["minions"])
	missing, ok2 := stringList(load["missing"])
	if !ok1 || !ok2 {
		return nil, malformed("publish reply minions/missing are not string lists", true)
	}
	return &PublishResult{JID: jid, Minions: minions, Missing: missing}, nil
}

// checkPublishAck checks a successful publish reply against the request. Refusals (no minions,
// errors) were sorted out before: they prove nothing was published whatever they say.
func checkPublishAck(req PublishRequest, res *PublishResult) error {
	if req.JID != "" && res.JID != req.JID {
		return errors.WithStack(&replyMismatchError{Field: "jid", Want: string(req.JID), Got: string(res.JID)})
	}
	if req.Target.Type != targetList {
		return nil
	}
	// Salt's list matcher answers minions = the target ids with an accepted key and missing =
	// the others, each in target order (a repeated id repeated): together exactly the target.
	want := make(map[string]int, len(req.Target.List))
	for _, id := range req.Target.List {
		want[id]++
	}
	ok := len(res.Minions)+len(res.Missing) == len(req.Target.List)
	for _, ids := range [][]string{res.Minions, res.Missing} {
		for _, id := range ids {
			if want[id] == 0 {
				ok = false
			}
			want[id]--
		}
	}
	if !ok {
		return errors.WithStack(&replyMismatchError{Field: "minions", Want: fmt.Sprint(req.Target.List),
			Got: fmt.Sprintf("minions %v missing %v", res.Minions, res.Missing)})
	}
	return nil
}
