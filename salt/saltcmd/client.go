package saltcmd

import (
	"context"
	"log/slog"
	"time"

	"github.com/cockroachdb/errors"

	"github.com/oduflow/oduflow-go/salt"
)

// Client runs execution-module functions on minions through one master's request port and
// reads their returns from one or several masters' event buses. It is safe for concurrent use;
// every run has its own bus connections.
type Client struct {
	pub       *salt.Client
	buses     []string
	eventOpts []salt.EventOption
	jids      *salt.JIDGenerator
	jobCache  bool
	presence  bool
	timeout   time.Duration
	gather    time.Duration
	log       *slog.Logger
}

// Option configures New.
type Option func(*Client)

// WithEventBus adds the event bus of another master of a hot multi-master pair: the client
// publishes through the one request port given to New and reads every bus, so a return that
// reaches only one master, or both, is seen once.
func WithEventBus(addr string) Option {
	return func(c *Client) { c.buses = append(c.buses, addr) }
}

// WithEventOptions passes options to salt.SubscribeEvents for every bus (limits, buffer,
// dialer, logger). The client adds its own tag filter and, unless given here, a buffer of
// 16384 events / 48 MiB, so that a fleet answering at once is not cut by a Gap.
func WithEventOptions(opts ...salt.EventOption) Option {
	return func(c *Client) { c.eventOpts = append(c.eventOpts, opts...) }
}

// WithJobCache says that the master keeps a job cache (job_cache: True): a minion whose return
// was not seen is looked up with the runner jobs.lookup_jid before it is declared lost. The
// oduflow dispatcher's deployment runs with job_cache: False, where this finds nothing.
func WithJobCache() Option { return func(c *Client) { c.jobCache = true } }

// WithPresenceCheck turns the presence check on or off (default on): when minions answered
// neither the job nor saltutil.find_job, the runner manage.present tells which of them the
// master sees connected; the others are NotConnected instead of NoResponse.
func WithPresenceCheck(on bool) Option { return func(c *Client) { c.presence = on } }

// WithTimeouts sets the defaults of Cmd.Timeout and Cmd.GatherJobTimeout (5 s and 10 s, as
// Salt's timeout and gather_job_timeout), also used by Watch.
func WithTimeouts(timeout, gatherJobTimeout time.Duration) Option {
	return func(c *Client) { c.timeout, c.gather = timeout, gatherJobTimeout }
}

// WithLogger sets the logger (default: discard). It logs runs, JIDs, counts and gaps, never
// returned data or event contents.
func WithLogger(l *slog.Logger) Option { return func(c *Client) { c.log = l } }

// New returns a client that publishes through pub and reads returns from the event bus at
// eventsAddr ("unix:///var/run/salt/master/master_event_pub.ipc" or "tcp://127.0.0.1:4512").
// No I/O happens until the first run.
func New(pub *salt.Client, eventsAddr string, opts ...Option) (*Client, error) {
	if pub == nil {
		return nil, refuse(ErrInvalidCommand, "nil salt client")
	}
	c := &Client{pub: pub, buses: []string{eventsAddr}, presence: true,
		timeout: defaultTimeout, gather: defaultGatherJobTimeout}
	for _, o := range opts {
		o(c)
	}
	for _, b := range c.buses {
		if b == "" {
			return nil, refuse(ErrInvalidCommand, "empty event bus address")
		}
	}
	if c.timeout <= 0 || c.gather <= 0 {
		return nil, refuse(ErrInvalidCommand, "timeouts must be positive")
	}
	c.jids = salt.NewJIDGenerator()
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	return c, nil
}

func (c *Client) withDefaults(cmd Cmd) Cmd {
	if cmd.Timeout == 0 {
		cmd.Timeout = c.timeout
	}
	if cmd.GatherJobTimeout == 0 {
		cmd.GatherJobTimeout = c.gather
	}
	return cmd
}

// Published is the master's acknowledgement of an asynchronous run.
type Published struct {
	JID salt.JID
	// Minions are the minions the master expects to answer (accepted keys matching the
	// target).
	Minions []string
	// Missing are ids of a list target without an accepted key: they will never answer.
	Missing []string
}

// Run publishes cmd and follows it: it subscribes to every event bus first, publishes with a
// preassigned JID, and returns a Job whose Results stream each expected minion's end as it is
// known. A publish error is returned as package salt types it (salt.IsNotPublished,
// salt.IsOutcomeUnknown); a command refused locally is ErrGuardedFunction, ErrInvalidTarget or
// ErrInvalidCommand. ctx bounds the whole run: when it is done, minions not yet accounted for
// end as Running (find_job last found the job running) or NoResponse.
func (c *Client) Run(ctx context.Context, cmd Cmd) (*Job, error) {
	cmd = c.withDefaults(cmd)
	if err := cmd.validate(); err != nil {
		return nil, err
	}
	jid := c.jids.Next()
	bus, err := c.subscribe(ctx)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	res, err := c.pub.Publish(ctx, cmd.publishRequest(cmd.Target, cmd.Fun, cmd.Args, jid))
	if err != nil {
		bus.close()
		return nil, errors.Wrapf(err, "saltcmd: publish %s", errors.Safe(cmd.Fun))
	}
	c.log.Info("saltcmd run", "fun", cmd.Fun, "jid", string(jid), "minions", len(res.Minions),
		"missing", len(res.Missing))
	return c.follow(ctx, bus, cmd, jid, res.Minions, res.Missing, start, false), nil
}

// Async publishes cmd and returns at once with its JID and the minions the master expects;
// follow it later with Watch (or not at all). Errors are those of Run.
func (c *Client) Async(ctx context.Context, cmd Cmd) (*Published, error) {
	cmd = c.withDefaults(cmd)
	if err := cmd.validate(); err != nil {
		return nil, err
	}
	jid := c.jids.Next()
	res, err := c.pub.Publish(ctx, cmd.publishRequest(cmd.Target, cmd.Fun, cmd.Args, jid))
	if err != nil {
		return nil, errors.Wrapf(err, "saltcmd: publish %s", errors.Safe(cmd.Fun))
	}
	return &Published{JID: res.JID, Minions: res.Minions, Missing: res.Missing}, nil
}

// Watch follows a job published earlier (Async, or anyone's) for the given minions: it
// subscribes, asks the minions with saltutil.find_job at once, and collects returns as Run
// does. A return fired before Watch subscribed is not on the bus any more: such a minion ends
// ReturnLost unless WithJobCache finds it in the master's job cache.
func (c *Client) Watch(ctx context.Context, jid salt.JID, minions []string) (*Job, error) {
	if _, err := salt.ParseJID(string(jid)); err != nil {
		return nil, refuse(ErrInvalidCommand, "watch: %v", err)
	}
	if len(minions) == 0 {
		return nil, refuse(ErrInvalidCommand, "watch: no minions")
	}
	bus, err := c.subscribe(ctx)
	if err != nil {
		return nil, err
	}
	cmd := c.withDefaults(Cmd{})
	return c.follow(ctx, bus, cmd, jid, minions, nil, time.Now(), true), nil
}
