package salt

import (
	"context"
	"log/slog"
	"os"
	"os/user"
	"strconv"
	"sync"
	"time"

	"github.com/cockroachdb/errors"

	"github.com/oduflow/oduflow-go/internal/errmark"
	"github.com/oduflow/oduflow-go/internal/salttrace"
)

// Defaults of the Client options.
const (
	defaultRequestTimeout  = 60 * time.Second
	defaultMaxReplyBytes   = 16 << 20
	defaultEnvelopeVersion = 3
)

// Client talks to a Salt master's request port (ret_port, 4506) over the
// clear channel. It is safe for concurrent use; every request uses a fresh
// connection owned by the calling goroutine (WithConnectionReuse: an idle one
// proven alive by a ZMTP PING right before the request, else a fresh one).
type Client struct {
	pool   *connPool // nil without WithConnectionReuse
	ep     reqEndpoint
	cfg    clientConfig
	ctx    context.Context
	cancel context.CancelFunc
	once   sync.Once
}

// NewClient returns a client for addr ("tcp://127.0.0.1:4506" or
// "ipc:///path"). No I/O happens until the first request.
func NewClient(addr string, opts ...ClientOption) (_ *Client, err error) {
	defer errmark.Boundary(&err)
	ep, err := parseEndpoint(addr)
	if err != nil {
		return nil, err
	}
	set := settings{client: clientConfig{timeout: defaultRequestTimeout, maxReply: defaultMaxReplyBytes, version: defaultEnvelopeVersion,
		decode: defaultReplyDecodeLimits()}}
	applyClientOptions(&set, opts)
	cfg := set.client
	set.limits.applyTo(&cfg.maxReply, &cfg.decode)
	if cfg.maxReply <= 0 {
		return nil, errors.Wrap(ErrInvalidRequest, "max reply bytes must be positive")
	}
	if !cfg.decode.Valid() {
		return nil, errors.Wrap(ErrInvalidRequest, "invalid reply decode limits")
	}
	if cfg.logger == nil {
		cfg.logger = slog.New(slog.DiscardHandler)
	}
	if !cfg.osUserSet {
		cfg.osUser = currentOSUser()
	}
	ctx, cancel := context.WithCancel(context.Background())
	c := &Client{ep: ep, cfg: cfg, ctx: ctx, cancel: cancel}
	if cfg.reuse {
		c.pool = &connPool{}
	}
	return c, nil
}

func currentOSUser() string {
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username
	}
	return strconv.Itoa(os.Getuid())
}

// Close aborts requests in flight (their outcome is reported as unknown or
// not sent) and makes later requests fail with ErrClosed.
func (c *Client) Close() (err error) {
	defer errmark.Boundary(&err)
	c.once.Do(func() {
		c.cancel()
		if c.pool != nil {
			c.pool.close()
		}
	})
	return nil
}

// envelope wraps a clear load as {enc: clear, load, version}.
func (c *Client) envelope(load *orderedMap) ([]byte, error) {
	env := newOrderedMapCap(3).Set("enc", "clear").Set("load", load).Set("version", c.cfg.version)
	b, err := encodeSalt(env)
	if err != nil {
		return nil, errmark.Mark(err, ErrInvalidRequest)
	}
	return b, nil
}

// do sends one clear load and returns the decoded reply. It never retries.
func (c *Client) do(ctx context.Context, cmd string, load *orderedMap) (any, error) {
	if c.ctx.Err() != nil {
		return nil, errmark.Mark(errors.Wrap(ErrClosed, "client closed"), ErrNotSent)
	}
	body, err := c.envelope(load)
	if err != nil {
		return nil, notSent(err, "encoding request")
	}
	tr := salttrace.From(ctx)
	tr.Mark(salttrace.Encoded)
	rctx, cancel := deadlineFor(ctx, c.cfg.timeout)
	defer cancel()
	stop := context.AfterFunc(c.ctx, cancel)
	defer stop()
	start := time.Now()
	var raw []byte
	if c.pool != nil {
		raw, err = pooledRoundTrip(rctx, c.pool, c.ep, body, c.cfg.maxReply, tr)
	} else {
		raw, err = roundTrip(rctx, c.ep, body, c.cfg.maxReply, tr)
	}
	if err != nil {
		c.cfg.logger.LogAttrs(ctx, slog.LevelWarn, "salt request failed",
			slog.String("cmd", cmd), slog.Duration("elapsed", time.Since(start)),
			slog.Bool("not_sent", errors.Is(err, ErrNotSent)), slog.String("error", errors.Redact(err)))
		return nil, err
	}
	tr.Mark(salttrace.Returned)
	v, err := decodeValueLimited(raw, c.cfg.decode)
	if err != nil {
		return nil, outcomeUnknown(errmark.Mark(err, ErrMalformedReply), "decoding reply")
	}
	tr.Mark(salttrace.Decoded)
	c.cfg.logger.LogAttrs(ctx, slog.LevelDebug, "salt request done",
		slog.String("cmd", cmd), slog.Duration("elapsed", time.Since(start)), slog.Int("reply_bytes", len(raw)))
	return v, nil
}

// replyError classifies replies that are errors whatever the command:
// "bad load" strings, "Some exception ..." and bare {error: {...}} maps.
// It returns nil when the reply is something else.
func replyError(v any) error {
	switch x := v.(type) {
	case string:
		switch {
		case x == "bad load" || len(x) > 9 && x[:9] == "bad load:":
			return errors.Wrapf(ErrBadLoad, "reply %q", errors.Safe(x))
		case x == "Some exception handling minion payload":
			return errors.WithStack(ErrMasterException)
		case x == "payload and load must be a dict":
			return errors.Wrapf(ErrBadLoad, "reply %q", errors.Safe(x))
		}
	case map[string]any:
		if m, ok := x["msg"].(string); ok && m == "bad load" && len(x) == 1 {
			return errors.Wrap(ErrBadLoad, "reply {msg: bad load}")
		}
		if e, ok := x["error"]; ok {
			if em, ok := e.(map[string]any); ok {
				name, _ := em["name"].(string)
				msg, _ := em["message"].(string)
				if name == "" {
					return errors.Wrap(ErrMalformedReply, "error map without name")
				}
				return masterError(name, msg)
			}
		}
	}
	return nil
}

// malformed wraps ErrMalformedReply. For commands with side effects the
// outcome of the request is unknown, so the error is also marked so.
func malformed(what string, sideEffects bool) error {
	err := errors.Wrapf(ErrMalformedReply, "%s", errors.Safe(what))
	if sideEffects {
		return errmark.Mark(err, ErrOutcomeUnknown)
	}
	return err
}
