package cli

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/oduflow/oduflow-go/receipt"
	"github.com/oduflow/oduflow-go/salt"
)

func cmdEvents(e *env, args []string) error {
	fs := newFlagSet("events", "events [--tag PREFIX] [--count N] [--raw]\n\n"+
		"Prints the master's events, one JSON object per line ({\"tag\",\"data\"}, or {\"gap\"} when events may\n"+
		"have been missed). By default: salt/job/<jid>/error events are dropped (a rejected request carries its\n"+
		"password), password, token, secret and key fields are redacted, and job returns are reduced to\n"+
		"status and counts (a protocol-1 receipt is shown as is). --raw shows returns whole; the other two\n"+
		"rules stay.", e.g, e.stderr)
	tag := fs.String("tag", "", "only events whose tag starts with this prefix, e.g. salt/job/")
	count := fs.Int("count", 0, "stop after this many events (0: until interrupted)")
	raw := fs.Bool("raw", false, "show job returns whole (they can hold command output and secrets)")
	if _, err := parseArgs(fs, args, 0, 0, "no arguments"); err != nil {
		return err
	}
	if *count < 0 {
		return usagef("events: --count %d: must not be negative", *count)
	}
	if err := e.g.checkEvents("events"); err != nil {
		return err
	}
	if *raw {
		fmt.Fprintln(e.stderr, "events: --raw: job returns are shown whole (command output, state comments, possibly secrets)")
	}
	var opts []salt.EventOption
	if *tag != "" {
		opts = append(opts, salt.WithTagPrefixes(*tag))
	}
	opts = append(opts, salt.WithLogger(e.logger()))
	st, err := salt.SubscribeEvents(e.ctx, e.g.events, opts...)
	if err != nil {
		if e.ctx.Err() != nil {
			return nil
		}
		return unreachablef("events: cannot read the event bus %s: %v", e.g.events, oneLine(err.Error()))
	}
	defer st.Close()
	fmt.Fprintf(e.stderr, "events: reading %s (interrupt to stop)\n", e.g.events)
	enc := json.NewEncoder(e.stdout)
	enc.SetEscapeHTML(false)
	n := 0
	for {
		select {
		case <-e.ctx.Done():
			return nil
		case ev, ok := <-st.Events():
			if !ok {
				return nil
			}
			out, keep := sanitizeEvent(ev, *tag, *raw)
			if !keep {
				continue
			}
			if err := enc.Encode(out); err != nil {
				return err
			}
			n++
			if *count > 0 && n >= *count {
				return nil
			}
		}
	}
}

// sanitizeEvent returns what the events command prints for ev, and false for events it
// drops.
func sanitizeEvent(ev salt.Event, prefix string, raw bool) (map[string]any, bool) {
	if ev.Gap != nil || ev.Tag == "" { // a zero Event reads as a gap
		g := map[string]any{"reason": "", "dropped": 0}
		if ev.Gap != nil {
			g = map[string]any{"reason": ev.Gap.Reason, "dropped": ev.Gap.Dropped}
		}
		return map[string]any{"gap": g}, true
	}
	if prefix != "" && !strings.HasPrefix(ev.Tag, prefix) {
		return nil, false
	}
	if isErrorTag(ev.Tag) {
		return nil, false
	}
	data, _ := redact(ev.Data).(map[string]any)
	if data != nil && isReturnTag(ev.Tag) && !raw {
		if ret, ok := ev.Data["return"]; ok && data["fun"] != "oduflow_job.capabilities" {
			data["return"] = reduceReturn(ret)
		}
	}
	return map[string]any{"tag": ev.Tag, "data": data}, true
}

// isErrorTag: salt/job/<jid>/error (the whole rejected load, eauth password included).
func isErrorTag(tag string) bool {
	return strings.HasPrefix(tag, "salt/job/") && strings.HasSuffix(tag, "/error")
}

// isReturnTag: salt/job/<jid>/ret/<minion> and salt/run/<jid>/ret.
func isReturnTag(tag string) bool {
	return strings.Contains(tag, "/ret/") || (strings.HasPrefix(tag, "salt/run/") && strings.HasSuffix(tag, "/ret"))
}

// reduceReturn (oduflow_job.capabilities returns are shown as they are, redacted: protocol,
// versions and readiness) shows a protocol-1 receipt as is (it holds only identities and counts), a
// boolean as is (test.ping), and anything else as its reduction (status, passed, total).
func reduceReturn(ret any) any {
	if r, err := receipt.FromValue(ret); err == nil {
		return r
	}
	if b, ok := ret.(bool); ok {
		return b
	}
	s := receipt.Reduce(ret)
	return map[string]any{"reduced": true, "status": s.Status, "passed": s.Passed, "total": s.Total}
}

// secretKey reports whether a field name may hold a secret.
func secretKey(k string) bool {
	k = strings.ToLower(k)
	for _, s := range []string{"password", "passwd", "token", "secret", "key"} {
		if strings.Contains(k, s) {
			return true
		}
	}
	return false
}

// redact copies v, replacing the values of secret-looking fields at any depth.
func redact(v any) any {
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, x := range t {
			if secretKey(k) {
				out[k] = "<redacted>"
			} else {
				out[k] = redact(x)
			}
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, x := range t {
			out[i] = redact(x)
		}
		return out
	}
	return v
}
