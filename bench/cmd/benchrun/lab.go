package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/oduflow/oduflow-go/bench/internal/benchkit"
	"github.com/oduflow/oduflow-go/internal/salttrace"
	"github.com/oduflow/oduflow-go/salt"
)

// labEnv is the lab master as saltlab.sh env describes it.
type labEnv struct {
	master, events, keyFile, minion string
}

func readLab() (labEnv, error) {
	e := labEnv{master: os.Getenv("ODUFLOW_SALT_MASTER"), events: os.Getenv("ODUFLOW_SALT_EVENTS"),
		keyFile: os.Getenv("ODUFLOW_SALT_KEY_FILE"), minion: os.Getenv("ODUFLOW_SALT_MINION")}
	if e.master == "" || e.keyFile == "" || e.minion == "" || e.events == "" {
		return e, fmt.Errorf("the ODUFLOW_SALT_MASTER/EVENTS/KEY_FILE/MINION variables must be set (saltlab.sh env)")
	}
	return e, nil
}

// labClient reads the lab's variables and opens a client of its master (with connection reuse when
// reuse is set).
func labClient(reuse bool) (labEnv, *salt.Client, error) {
	env, err := readLab()
	if err != nil {
		return env, nil, err
	}
	c, err := env.clientFor(reuse)
	return env, c, err
}

func (e labEnv) client() (*salt.Client, error) {
	return salt.NewClient(e.master, salt.WithAuth(salt.UserKey("root", e.keyFile)), salt.WithRequestTimeout(10*time.Second))
}

// cmdPublishRTT: n sequential publishes of test.ping (list target, root key, a fresh preassigned JID
// each, as the anchor's run_job and persistent-channel variants do, so the minion gets the same job
// load), timed from the call to the publish reply. The caller drains the minion afterwards.
func cmdPublishRTT(ctx context.Context, args []string) (any, error) {
	fs := flag.NewFlagSet("publish_rtt", flag.ContinueOnError)
	n := fs.Int("n", 30, "publishes")
	warmup := fs.Int("warmup", 2, "warm-up publishes")
	reuse := fs.Bool("reuse", false, "salt.WithConnectionReuse (a PONG-proven idle connection per publish)")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	env, c, err := labClient(*reuse)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	gen := salt.NewJIDGenerator()
	var lat []time.Duration
	jids := make([]string, 0, *n+*warmup)
	for i := 0; i < *n+*warmup; i++ {
		req := salt.PublishRequest{Target: salt.ListTarget(env.minion), Fun: "test.ping", JID: gen.Next()}
		t0 := time.Now()
		res, err := c.Publish(ctx, req)
		dt := time.Since(t0)
		if err != nil {
			return nil, err
		}
		if res.JID != req.JID || len(res.Minions) != 1 {
			return nil, fmt.Errorf("unexpected publish reply %+v", res)
		}
		jids = append(jids, string(req.JID))
		if i >= *warmup {
			lat = append(lat, dt)
		}
	}
	return map[string]any{"ms": benchkit.Summarize(lat, time.Millisecond), "jids": len(jids), "reuse": *reuse}, nil
}

// cmdThroughput: K goroutines sharing ONE Client publish test.ping sequentially for d, each reusing
// one preassigned JID (the anchor's "fixed" JID policy: the master does the full publish every time,
// the minion runs each JID once).
func cmdThroughput(ctx context.Context, args []string) (any, error) {
	fs := flag.NewFlagSet("throughput", flag.ContinueOnError)
	k := fs.Int("publishers", 4, "concurrent publishers")
	d := fs.Duration("duration", 5*time.Second, "duration")
	reuse := fs.Bool("reuse", false, "salt.WithConnectionReuse")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	env, c, err := labClient(*reuse)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	gen := salt.NewJIDGenerator()
	var count, errs atomic.Int64
	var wg sync.WaitGroup
	var mu sync.Mutex
	var lat []time.Duration
	labDir := os.Getenv("ODUFLOW_SALTLAB_DIR")
	if labDir == "" {
		labDir = "/srv/saltlab"
	}
	cpu0 := takeCPUSnapshot(labDir)
	start := time.Now()
	end := start.Add(*d)
	for range *k {
		jid := gen.Next()
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine []time.Duration
			for ctx.Err() == nil {
				t0 := time.Now()
				_, err := c.Publish(ctx, salt.PublishRequest{Target: salt.ListTarget(env.minion), Fun: "test.ping", JID: jid})
				now := time.Now()
				if now.After(end) {
					break
				}
				if err != nil {
					errs.Add(1)
					continue
				}
				count.Add(1)
				mine = append(mine, now.Sub(t0))
			}
			mu.Lock()
			lat = append(lat, mine...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	// CPU of the window (the master's, the minion's, ours, the machine's): which one bounds the rate
	use := cpuUse(cpu0, takeCPUSnapshot(labDir))
	if n := count.Load(); n > 0 && use != nil {
		// the master's CPU per publish: with the machine's CPUs it bounds the rate whatever the client does
		use["master_cpu_ms_per_publish"] = benchkit.Round3(use["master_cores"] * d.Seconds() * 1000 / float64(n))
		use["client_cpu_ms_per_publish"] = benchkit.Round3(use["client_cores"] * d.Seconds() * 1000 / float64(n))
	}
	return map[string]any{"publishers": *k, "duration_s": d.Seconds(), "publishes": count.Load(), "errors": errs.Load(),
		"per_s": benchkit.Round3(float64(count.Load()) / d.Seconds()), "latency_ms": benchkit.Summarize(lat, time.Millisecond),
		"reuse": *reuse, "cpu": use}, nil
}

// jobEvents is what e2e_ping learns of one JID from the event bus.
type jobEvents struct {
	newStamp, retStamp time.Time
	newSeen            time.Time      // when the new event reached the consumer
	jidStamp, pubStamp time.Time      // -raw: the _stamp of the master's "<jid>" event (fired just before new) and of salt/job/<jid>/publish (3007+, just after)
	ret                chan time.Time // receives the client-observed arrival of the return
}

// cmdE2EPing: n sequential test.ping jobs through the library: one persistent event-bus subscription
// (connected before the first publish), Client.Publish, then the return event. Client-observed time =
// publish call -> return event received. The master-observed span = the _stamp of salt/job/<jid>/new
// to the _stamp of its return event; their difference is the library's overhead (the master's own
// publish work before the new event and the bus delivery of the return are counted in it).
func cmdE2EPing(ctx context.Context, args []string) (any, error) {
	fs := flag.NewFlagSet("e2e_ping", flag.ContinueOnError)
	n := fs.Int("n", 10, "test.ping jobs")
	warmup := fs.Int("warmup", 2, "warm-up jobs")
	timeout := fs.Duration("timeout", 20*time.Second, "per job")
	reuse := fs.Bool("reuse", false, "salt.WithConnectionReuse (a PONG-proven idle connection per publish)")
	raw := fs.Bool("raw", false, "also time the bytes of each event on a second, bare connection to the bus (no decoding), and read the master's <jid> and publish events")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	env, err := readLab()
	if err != nil {
		return nil, err
	}
	c, err := env.clientFor(*reuse)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	prefixes := []string{"salt/job/"}
	if *raw {
		prefixes = append(prefixes, "20") // the master's "<jid>" event: its tag is the JID alone
	}
	stream, err := salt.SubscribeEvents(sctx, env.events, salt.WithTagPrefixes(prefixes...))
	if err != nil {
		return nil, err
	}
	defer stream.Close()
	var rawr *rawBusReader
	if *raw {
		if rawr, err = newRawBusReader(sctx, env.events); err != nil {
			return nil, err
		}
		defer rawr.close()
	}
	var mu sync.Mutex
	jobs := map[salt.JID]*jobEvents{}
	go func() {
		for ev := range stream.Events() {
			now := time.Now()
			var jid salt.JID
			tag := ev.Tag
			switch {
			case ev.JobNew != nil:
				jid = ev.JobNew.JID
			case ev.JobReturn != nil:
				jid = ev.JobReturn.JID
			case strings.HasPrefix(tag, "salt/job/") && strings.HasSuffix(tag, "/publish"):
				jid = salt.JID(strings.TrimSuffix(strings.TrimPrefix(tag, "salt/job/"), "/publish"))
			default:
				jid = salt.JID(tag) // the "<jid>" event, or nothing watched
			}
			mu.Lock()
			j := jobs[jid]
			if j == nil {
				mu.Unlock()
				continue
			}
			st := stamp(ev.Data)
			switch {
			case ev.JobNew != nil:
				j.newStamp, j.newSeen = st, now
			case ev.JobReturn != nil:
				j.retStamp = st
			case tag == string(jid):
				j.jidStamp = st
			default:
				j.pubStamp = st
			}
			mu.Unlock()
			if ev.JobReturn == nil {
				continue
			}
			select {
			case j.ret <- now:
			default:
			}
		}
	}()
	gen := salt.NewJIDGenerator()
	var total, span, overhead, pubReply []time.Duration
	// the breakdown of the overhead: before the master's new stamp (the publish request up to the
	// master firing salt/job/<jid>/new) and after its return stamp (the bus delivering the return
	// to our consumer); with -raw the latter is split at the bytes' arrival on a bare connection
	parts := map[string][]time.Duration{}
	add := func(k string, d time.Duration) { parts[k] = append(parts[k], d) }
	addSpan := func(k string, d time.Duration) { // a phase a fresh or a reused connection does not pass is -1
		if d >= 0 {
			add(k, d)
		}
	}
	for i := 0; i < *n+*warmup; i++ {
		jid := gen.Next()
		j := &jobEvents{ret: make(chan time.Time, 1)}
		mu.Lock()
		jobs[jid] = j
		mu.Unlock()
		if rawr != nil {
			rawr.watch(string(jid))
		}
		var tr salttrace.Trace
		t0 := time.Now()
		if _, err := c.Publish(salttrace.With(ctx, &tr), salt.PublishRequest{Target: salt.ListTarget(env.minion), Fun: "test.ping", JID: jid}); err != nil {
			return nil, err
		}
		tp := time.Now()
		var t1 time.Time
		select {
		case t1 = <-j.ret:
		case <-time.After(*timeout):
			return nil, fmt.Errorf("no return for job %d", i)
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		mu.Lock()
		delete(jobs, jid)
		mu.Unlock() // j is no longer written: its job is out of the map
		if i < *warmup {
			continue
		}
		if j.newStamp.IsZero() || j.retStamp.IsZero() {
			return nil, fmt.Errorf("job %d: the new or return event had no _stamp", i)
		}
		total = append(total, t1.Sub(t0))
		pubReply = append(pubReply, tp.Sub(t0))
		span = append(span, j.retStamp.Sub(j.newStamp))
		overhead = append(overhead, t1.Sub(t0)-j.retStamp.Sub(j.newStamp))
		add("call_to_sent", tr.Span(salttrace.Start, salttrace.Sent))
		addSpan("call_to_sent.auth_encode", tr.Span(salttrace.Start, salttrace.Encoded))
		addSpan("call_to_sent.tcp_connect", tr.Span(salttrace.Encoded, salttrace.Connected))
		addSpan("call_to_sent.zmtp_handshake", tr.Span(salttrace.Connected, salttrace.Handshaken))
		addSpan("call_to_sent.send", tr.Span(salttrace.Handshaken, salttrace.Sent))
		addSpan("call_to_sent.ping_pong_proof", tr.Span(salttrace.Encoded, salttrace.Proven))
		add("sent_to_master_new_stamp", j.newStamp.Sub(tr.At[salttrace.Sent]))
		add("master_new_stamp_to_reply_read", tr.At[salttrace.Replied].Sub(j.newStamp))
		add("master_new_stamp_to_new_seen", j.newSeen.Sub(j.newStamp))
		add("master_ret_stamp_to_ret_seen", t1.Sub(j.retStamp))
		if !j.jidStamp.IsZero() {
			add("master_jid_event_stamp_to_new_stamp", j.newStamp.Sub(j.jidStamp))
		}
		if !j.pubStamp.IsZero() {
			add("master_new_stamp_to_publish_event_stamp", j.pubStamp.Sub(j.newStamp))
		}
		if rawr != nil {
			newAt, retAt := rawr.result(string(jid), 100*time.Millisecond)
			if !newAt.IsZero() && !retAt.IsZero() {
				add("raw_master_new_stamp_to_bytes", newAt.Sub(j.newStamp))
				add("raw_master_ret_stamp_to_bytes", retAt.Sub(j.retStamp))
				add("raw_ret_bytes_to_ret_seen", t1.Sub(retAt))
			}
		}
	}
	breakdown := map[string]benchkit.Summary{}
	for k, v := range parts {
		breakdown[k] = benchkit.Summarize(v, time.Millisecond)
	}
	return map[string]any{"total_ms": benchkit.Summarize(total, time.Millisecond), "master_span_ms": benchkit.Summarize(span, time.Millisecond),
		"overhead_ms": benchkit.Summarize(overhead, time.Millisecond), "publish_reply_ms": benchkit.Summarize(pubReply, time.Millisecond),
		"breakdown_ms": breakdown}, nil
}

// stamp parses Salt's _stamp (naive UTC isoformat, microseconds).
func stamp(data map[string]any) time.Time {
	s, _ := data["_stamp"].(string)
	for _, layout := range []string{"2006-01-02T15:04:05.999999", "2006-01-02T15:04:05"} {
		if t, err := time.ParseInLocation(layout, s, time.UTC); err == nil {
			return t
		}
	}
	return time.Time{}
}
