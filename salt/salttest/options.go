package salttest

import (
	"log/slog"
	"time"
)

// Framing selects how event-bus frames are delimited on the wire.
type Framing int

const (
	// FramingBare sends msgpack maps back to back, as Salt 3006.0 does.
	FramingBare Framing = iota
	// FramingLengthPrefixed puts a 4-byte big-endian length before each map (3006.26+).
	FramingLengthPrefixed
)

func (f Framing) String() string {
	if f == FramingLengthPrefixed {
		return "length-prefixed"
	}
	return "bare"
}

// ACLEntry is one entry of an external_auth ACL list. Exactly one form is used:
//   - Fun: a string entry, a regex matched at the start of the function name ("test.",
//     "state.apply") or a runner/wheel spec ("@runner", "@wheel", "@jobs");
//   - Target + Funs: a {<compound target>: [regex...]} entry, allowing Funs on the minions the
//     target matches (all targeted minions must be covered).
type ACLEntry struct {
	Fun    string
	Target string
	Funs   []string
}

// allowFun is a top-level function regex entry (allowed on every minion).
func allowFun(regex string) ACLEntry { return ACLEntry{Fun: regex} }

// AllowOn allows funcs (regexes) on the minions matched by the compound target.
func AllowOn(target string, funcs ...string) ACLEntry {
	return ACLEntry{Target: target, Funs: append([]string(nil), funcs...)}
}

// LabACL is the ACL of the capture lab:
// [{'client-*': ['test.*', 'state.apply', 'saltutil.*', 'oduflow_job.*']}, '@runner', '@wheel'].
func LabACL() []ACLEntry {
	return []ACLEntry{
		AllowOn("client-*", `test.*`, `state.apply`, `saltutil.*`, `oduflow_job.*`),
		allowFun("@runner"),
		allowFun("@wheel"),
	}
}

// tokenData is an eauth token as the master stores it (localfs token backend).
type tokenData struct {
	Token  string
	Name   string
	Eauth  string
	Start  time.Time
	Expire time.Time
}

type eauthUser struct {
	backend, user, password string
	acl                     []ACLEntry
}

type config struct {
	dir              string
	framing          Framing
	eventTCP         bool
	users            []eauthUser
	logger           *slog.Logger
	minAuthVersion   int
	rootKey          string
	tokens           []tokenData
	heartbeat        time.Duration
	tokenExpire      time.Duration
	eventBuffer      int
	blacklistUsers   []string
	blacklistFuns    []string
	requestAddr      string
	maxRequestBytes  uint64
	closeGrace       time.Duration
	wheelLocalKeys   []string
	minionJIDHistory int
	roles            map[string]Outcome
	generation       Generation
	minAuthSet       bool // WithMinimumAuthVersion was given: it overrides the generation's default
}

// Option configures Start.
type Option func(*config)

// WithDir sets the directory holding the event socket and the .root_key file. Default: a new
// temporary directory removed by Close. Keep the path short: the socket path
// <dir>/master_event_pub.ipc must fit in 107 bytes (t.TempDir() of a long test name may not).
func WithDir(dir string) Option { return func(c *config) { c.dir = dir } }

// WithEventFraming selects the event-bus framing (default FramingBare, like 3006.0).
func WithEventFraming(f Framing) Option { return func(c *config) { c.framing = f } }

// withEventTCP also serves the event bus on 127.0.0.1:<ephemeral> (ipc_mode: tcp); see eventTCPAddr.
func withEventTCP() Option { return func(c *config) { c.eventTCP = true } }

// WithEauthUser configures an external_auth user. Backend "auto" accepts any password (like
// Salt's auto module); every other backend compares the password exactly. User "*" matches
// any user name the backend authenticates. Several users and backends may be configured.
func WithEauthUser(backend, user, password string, acl []ACLEntry) Option {
	return func(c *config) {
		c.users = append(c.users, eauthUser{backend: backend, user: user, password: password,
			acl: append([]ACLEntry(nil), acl...)})
	}
}

// WithRole sets the outcome of state.apply and state.sls of role on the generic minions (those
// added with a nil handler). A role not set succeeds.
func WithRole(role string, o Outcome) Option {
	return func(c *config) {
		if c.roles == nil {
			c.roles = map[string]Outcome{}
		}
		c.roles[role] = o
	}
}

// WithLogger sets the logger (default: discard). Keys, passwords and tokens are never logged.
func WithLogger(l *slog.Logger) Option { return func(c *config) { c.logger = l } }

// WithMinimumAuthVersion rejects requests whose envelope version is below n with the bare
// reply "bad load", as 3006.17+ masters do with minimum_auth_version: 3. Default 0 (3006.0);
// Generation3008 defaults to 3.
func WithMinimumAuthVersion(n int) Option {
	return func(c *config) { c.minAuthVersion, c.minAuthSet = n, true }
}

// withRootKey fixes the initial root key (76-char key string) instead of a random one. Restart
// and RotateKey still replace it.
func withRootKey(key string) Option { return func(c *config) { c.rootKey = key } }

// withToken preloads an eauth token (as if mk_token had been called before).
func withToken(t tokenData) Option { return func(c *config) { c.tokens = append(c.tokens, t) } }

// WithHeartbeat makes the request server send a ZMTP PING to every connected peer every d.
func WithHeartbeat(d time.Duration) Option { return func(c *config) { c.heartbeat = d } }

// withTokenExpire sets the token lifetime (default 43200 s, Salt's token_expire).
func withTokenExpire(d time.Duration) Option { return func(c *config) { c.tokenExpire = d } }

// withEventReaderBuffer bounds the frames queued per event-bus reader (default 1024). A reader
// whose queue is full is disconnected, like a Salt reader that exceeds ipc_write_buffer.
func withEventReaderBuffer(n int) Option { return func(c *config) { c.eventBuffer = n } }

// withBlacklist sets publisher_acl_blacklist: users and functions as regexes matched at the start.
func withBlacklist(users, funs []string) Option {
	return func(c *config) { c.blacklistUsers, c.blacklistFuns = users, funs }
}

// withMaxRequestBytes caps a request frame (default 16 MiB); a larger frame drops the connection.
func withMaxRequestBytes(n uint64) Option { return func(c *config) { c.maxRequestBytes = n } }

func defaultConfig() config {
	return config{
		framing:          FramingBare,
		tokenExpire:      43200 * time.Second,
		eventBuffer:      1024,
		requestAddr:      "127.0.0.1:0",
		maxRequestBytes:  16 << 20,
		closeGrace:       5 * time.Second,
		wheelLocalKeys:   []string{"master.pem", "master.pub"},
		minionJIDHistory: 100,
	}
}
