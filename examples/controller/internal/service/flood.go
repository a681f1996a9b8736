package service

import (
	"context"
	"log"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Defaults of the flood bounds (Limits).
const (
	// DefaultMaxConnections bounds the open connections when ODUFLOW_MAX_CONNECTIONS is unset; the bound
	// in force is never above the descriptor limit less descriptorReserve.
	DefaultMaxConnections = 1024
	// DefaultMaxConnectionsPerSource bounds one source address's open connections
	// (ODUFLOW_MAX_CONNECTIONS_PER_SOURCE).
	DefaultMaxConnectionsPerSource = 64
	// DefaultUnauthenticatedPerSource is the unauthenticated requests one source address may make per
	// second, sustained (ODUFLOW_MAX_UNAUTHENTICATED_PER_SOURCE); twice as many in a burst. More: 429.
	DefaultUnauthenticatedPerSource = 10
	// DefaultRefusalInterval is the period of the refusal counts in the audit trail.
	DefaultRefusalInterval = 10 * time.Second
	// descriptorReserve is what the bound on connections leaves of the process's descriptors for the
	// claim store, the Salt client, the event bus, the catalog and the logs.
	descriptorReserve = 64
	// maxSources bounds the sources the per-source tables keep at once.
	maxSources = 1 << 16
)

// Limits bounds what callers that do not authenticate can cost: open connections in all and per source
// address (connections over either are closed as soon as accepted), and unauthenticated requests per
// source (429 over the rate). Zero fields take the defaults.
type Limits struct {
	MaxConnections          int
	MaxConnectionsPerSource int
	UnauthenticatedPerSec   int
}

func (l Limits) withDefaults() Limits {
	if l.MaxConnections <= 0 {
		l.MaxConnections = DefaultMaxConnections
	}
	if l.MaxConnectionsPerSource <= 0 {
		l.MaxConnectionsPerSource = DefaultMaxConnectionsPerSource
	}
	if l.UnauthenticatedPerSec <= 0 {
		l.UnauthenticatedPerSec = DefaultUnauthenticatedPerSource
	}
	if fds := descriptorLimit(); fds > 0 && l.MaxConnections > fds-descriptorReserve {
		l.MaxConnections = max(fds-descriptorReserve, 8)
	}
	l.MaxConnectionsPerSource = min(l.MaxConnectionsPerSource, l.MaxConnections)
	return l
}

// descriptorLimit is the process's soft RLIMIT_NOFILE (0 when unknown).
func descriptorLimit() int {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil || rl.Cur > 1<<30 {
		return 0
	}
	return int(rl.Cur)
}

// Listener wraps ln with the service's connection bounds (Limits): a connection over the total or its
// source's bound is closed at once and counted in the audit trail's refusal counts (reason
// connection_limit), so that descriptors never run out and one source cannot take every connection.
// Wrap it before TLS: tls.NewListener(svc.Listener(ln), svc.TLSConfig()).
func (s *Service) Listener(ln net.Listener) net.Listener {
	return &limitListener{Listener: ln, max: s.limits.MaxConnections, perSource: s.limits.MaxConnectionsPerSource,
		per: map[string]int{}, refusals: s.refusals}
}

type limitListener struct {
	net.Listener
	max, perSource int
	refusals       *refusalCounter

	mu    sync.Mutex
	total int
	per   map[string]int
}

func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		src := hostOf(c.RemoteAddr().String())
		l.mu.Lock()
		if l.total >= l.max || l.per[src] >= l.perSource || len(l.per) >= maxSources && l.per[src] == 0 {
			l.mu.Unlock()
			_ = c.Close()
			l.refusals.add(src, "connection_limit", "", 0)
			continue
		}
		l.total++
		l.per[src]++
		l.mu.Unlock()
		return &limitedConn{Conn: c, release: func() {
			l.mu.Lock()
			defer l.mu.Unlock()
			l.total--
			if l.per[src]--; l.per[src] <= 0 {
				delete(l.per, src)
			}
		}}, nil
	}
}

type limitedConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}

// hostOf is the host of a host:port address (the address itself when it has no port).
func hostOf(addr string) string {
	if h, _, err := net.SplitHostPort(addr); err == nil {
		return h
	}
	return addr
}

// sourceRate is a token bucket per source address: rate a second, bursts of twice as many.
type sourceRate struct {
	rate float64
	now  func() time.Time
	mu   sync.Mutex
	b    map[string]*bucket
}

type bucket struct {
	tokens float64
	at     time.Time
}

func newSourceRate(perSec int, now func() time.Time) *sourceRate {
	return &sourceRate{rate: float64(perSec), now: now, b: map[string]*bucket{}}
}

// allow takes one token of src's bucket; false when it is empty.
func (r *sourceRate) allow(src string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	now, burst := r.now(), 2*r.rate
	b, ok := r.b[src]
	if !ok {
		if len(r.b) >= maxSources {
			r.prune(now)
			if len(r.b) >= maxSources {
				return false // too many sources at once: the newcomers wait
			}
		}
		b = &bucket{tokens: burst, at: now}
		r.b[src] = b
	}
	b.tokens = min(burst, b.tokens+now.Sub(b.at).Seconds()*r.rate)
	b.at = now
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}

// prune drops the buckets that are full again (the same as no bucket).
func (r *sourceRate) prune(now time.Time) {
	for k, b := range r.b {
		if b.tokens+now.Sub(b.at).Seconds()*r.rate >= 2*r.rate {
			delete(r.b, k)
		}
	}
}

// refusalCounter aggregates the refusals of callers that did not authenticate (401, 429 over the
// source's rate, connections over a bound, TLS handshakes that failed): one audit line per source,
// reason and target company (a minion's binding, when the path names one) per interval, with the count,
// instead of one line each.
type refusalCounter struct {
	audit    *slog.Logger
	interval time.Duration
	mu       sync.Mutex
	counts   map[refusalKey]int
	since    time.Time
	stop     chan struct{}
	done     chan struct{}
}

type refusalKey struct {
	source, reason, company string
	status                  int
}

func newRefusalCounter(audit *slog.Logger, interval time.Duration) *refusalCounter {
	if interval <= 0 {
		interval = DefaultRefusalInterval
	}
	return &refusalCounter{audit: audit, interval: interval, counts: map[refusalKey]int{}, since: time.Now()}
}

// start flushes every interval until close.
func (c *refusalCounter) start() {
	c.stop, c.done = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(c.done)
		t := time.NewTicker(c.interval)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				c.flush()
			case <-c.stop:
				c.flush()
				return
			}
		}
	}()
}

// close stops the flushes after a last one.
func (c *refusalCounter) close() {
	if c == nil || c.stop == nil {
		return
	}
	select {
	case <-c.stop:
	default:
		close(c.stop)
	}
	<-c.done
}

func (c *refusalCounter) add(source, reason, company string, status int) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	k := refusalKey{source: source, reason: reason, company: company, status: status}
	if _, ok := c.counts[k]; !ok && len(c.counts) >= maxSources {
		k.source = "other" // bounded: the sources past the table's size are counted together
	}
	c.counts[k]++
}

// flush writes one line per source and reason counted since the last flush.
func (c *refusalCounter) flush() {
	c.mu.Lock()
	counts, since, now := c.counts, c.since, time.Now()
	c.counts, c.since = map[refusalKey]int{}, now
	c.mu.Unlock()
	for k, n := range counts {
		c.audit.LogAttrs(context.Background(), slog.LevelInfo, "audit", slog.Bool("audit", true),
			slog.String("action", "refusals"), slog.String("principal", ""), slog.String("company", k.company),
			slog.String("source", k.source), slog.String("reason", k.reason), slog.Int("count", n),
			slog.Int("http_status", k.status), slog.String("outcome", "refused"),
			slog.Time("since", since), slog.Time("until", now))
	}
}

// refuseUnauthenticated answers a request without a principal: 401, or 429 past its source's rate. Either
// is counted (refusalCounter), never logged one line each.
func (s *Service) refuseUnauthenticated(w http.ResponseWriter, r *http.Request) {
	rec := auditOf(r.Context())
	rec.aggregated = true
	src := hostOf(r.RemoteAddr)
	if s.unauth != nil && !s.unauth.allow(src) {
		s.refusals.add(src, "unauthenticated_rate", rec.company, http.StatusTooManyRequests)
		rec.errorCode = "too_many_unauthenticated"
		w.Header().Set("Retry-After", "1")
		writeJSON(w, http.StatusTooManyRequests, body("too many unauthenticated requests from this address", exitRetry, "too_many_unauthenticated"))
		return
	}
	s.refusals.add(src, "unauthenticated", rec.company, http.StatusUnauthorized)
	rec.errorCode = "unauthenticated"
	w.Header().Set("WWW-Authenticate", `Bearer realm="oduflow"`)
	writeJSON(w, http.StatusUnauthorized, body("authentication required: a bearer token or a client certificate", exitNothingWritten, "unauthenticated"))
}

// ServerErrorLog is the http.Server's ErrorLog for this service: a failed TLS handshake (a client without
// a certificate of the client CA, a scanner) is counted as a refusal of its source (reason
// tls_handshake), never logged one line each; anything else goes to the service's logger as a warning.
func (s *Service) ServerErrorLog() *log.Logger {
	return log.New(serverErrors{s}, "", 0)
}

type serverErrors struct{ s *Service }

// tlsHandshakePrefix starts net/http's line for a failed handshake: "http: TLS handshake error from
// ADDR: REASON".
const tlsHandshakePrefix = "http: TLS handshake error from "

func (w serverErrors) Write(p []byte) (int, error) {
	line := strings.TrimSpace(string(p))
	if rest, ok := strings.CutPrefix(line, tlsHandshakePrefix); ok {
		addr, _, _ := strings.Cut(rest, ": ")
		w.s.refusals.add(hostOf(addr), "tls_handshake", "", 0)
		return len(p), nil
	}
	w.s.log.Warn("http server", "error", line)
	return len(p), nil
}
