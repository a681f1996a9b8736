package main

import (
	"context"
	"flag"
	"fmt"
	"time"

	"github.com/oduflow/oduflow-go/bench/internal/benchkit"
	"github.com/oduflow/oduflow-go/internal/salttrace"
	"github.com/oduflow/oduflow-go/salt"
)

// clientFor is the lab client, with connection reuse when reuse is set.
func (e labEnv) clientFor(reuse bool) (*salt.Client, error) {
	opts := []salt.ClientOption{salt.WithAuth(salt.UserKey("root", e.keyFile)), salt.WithRequestTimeout(10 * time.Second)}
	if reuse {
		opts = append(opts, salt.WithConnectionReuse())
	}
	return salt.NewClient(e.master, opts...)
}

// phaseSpan is one line of the publish breakdown: the time from one stamped phase to the next.
type phaseSpan struct {
	name     string
	from, to salttrace.Phase
}

// Breakdown lines of a fresh connection and of a reused one (the ZMTP PING/PONG proof replaces
// connect + handshake). "release" is the connection's close (fresh: a TCP close on loopback runs
// the peer's side of it in the same system call) or its return to the pool. "master" is send -> whole reply read: the master's own work plus two
// loopback hops; every other line is this process (connect and handshake are round trips to the
// master's ZeroMQ I/O thread, not to its workers).
var (
	freshSpans = []phaseSpan{{"auth_key_file", salttrace.Start, salttrace.Authed}, {"encode", salttrace.Authed, salttrace.Encoded},
		{"tcp_connect", salttrace.Encoded, salttrace.Connected}, {"zmtp_handshake", salttrace.Connected, salttrace.Handshaken},
		{"send", salttrace.Handshaken, salttrace.Sent}, {"master", salttrace.Sent, salttrace.Replied},
		{"release", salttrace.Replied, salttrace.Returned}, {"decode", salttrace.Returned, salttrace.Decoded}, {"check", salttrace.Decoded, salttrace.Done}}
	reusedSpans = []phaseSpan{{"auth_key_file", salttrace.Start, salttrace.Authed}, {"encode", salttrace.Authed, salttrace.Encoded},
		{"ping_pong_proof", salttrace.Encoded, salttrace.Proven},
		{"send", salttrace.Proven, salttrace.Sent}, {"master", salttrace.Sent, salttrace.Replied},
		{"release", salttrace.Replied, salttrace.Returned}, {"decode", salttrace.Returned, salttrace.Decoded}, {"check", salttrace.Decoded, salttrace.Done}}
)

// cmdPublishBreakdown: n sequential publishes of test.ping with a trace of each one's phases
// (internal/salttrace), on fresh connections (the default Client) and on reused ones
// (WithConnectionReuse), interleaved one for one. One preassigned JID is reused (the master does
// the whole publish every time, the minion runs the job once), so no drain is needed. Reports the
// median of every phase (us), the total, and the client's own share (total minus "master").
func cmdPublishBreakdown(ctx context.Context, args []string) (any, error) {
	fs := flag.NewFlagSet("publish_breakdown", flag.ContinueOnError)
	n := fs.Int("n", 40, "publishes per mode")
	warmup := fs.Int("warmup", 3, "warm-up publishes per mode")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	env, err := readLab()
	if err != nil {
		return nil, err
	}
	fresh, err := env.clientFor(false)
	if err != nil {
		return nil, err
	}
	defer fresh.Close()
	reused, err := env.clientFor(true)
	if err != nil {
		return nil, err
	}
	defer reused.Close()
	req := salt.PublishRequest{Target: salt.ListTarget(env.minion), Fun: "test.ping", JID: salt.NewJIDGenerator().Next()}
	type mode struct {
		c     *salt.Client
		spans []phaseSpan
		by    map[string][]time.Duration
	}
	modes := map[string]*mode{"fresh": {c: fresh, spans: freshSpans, by: map[string][]time.Duration{}},
		"reused": {c: reused, spans: reusedSpans, by: map[string][]time.Duration{}}}
	for i := 0; i < *n+*warmup; i++ {
		for _, name := range []string{"fresh", "reused"} {
			m := modes[name]
			var tr salttrace.Trace
			if _, err := m.c.Publish(salttrace.With(ctx, &tr), req); err != nil {
				return nil, err
			}
			if i < *warmup {
				continue
			}
			total := tr.Span(salttrace.Start, salttrace.Done)
			if total < 0 {
				return nil, fmt.Errorf("%s publish %d: trace incomplete", name, i)
			}
			master := tr.Span(salttrace.Sent, salttrace.Replied)
			for _, sp := range m.spans {
				d := tr.Span(sp.from, sp.to)
				if d < 0 {
					return nil, fmt.Errorf("%s publish %d: phase %s not stamped (reuse did not reuse?)", name, i, sp.name)
				}
				m.by[sp.name] = append(m.by[sp.name], d)
			}
			m.by["total"] = append(m.by["total"], total)
			m.by["client_share"] = append(m.by["client_share"], total-master)
		}
	}
	out := map[string]any{"n": *n}
	for name, m := range modes {
		med := map[string]float64{}
		for k, v := range m.by {
			med[k] = benchkit.Summarize(v, time.Microsecond).Median
		}
		out[name+"_us"] = med
		out[name+"_total_ms"] = benchkit.Summarize(m.by["total"], time.Millisecond)
	}
	return out, nil
}
