package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/oduflow/oduflow-go/bench/internal/benchkit"
	"github.com/oduflow/oduflow-go/oduflow"
	"github.com/oduflow/oduflow-go/oduflow/claims"
	"github.com/oduflow/oduflow-go/oduflow/filestore"
	"github.com/oduflow/oduflow-go/receipt"
	"github.com/oduflow/oduflow-go/salt"
)

// A dispatched configure request, Start -> terminal status, against the lab master and its minion,
// split into what the minion does (its own apply), what the requirements make the dispatcher do on top
// (the capability check before dispatch, the receipt proof before a commit), and the rest (claims,
// locks, fsyncs, the publish, event delivery).
//
// Timeline of one request (all on this host's clock; the master's _stamps are on the same host):
//
//	t0          Start called
//	capStart    oduflow_job.capabilities published (Hooks.Observe "capabilities": its end and duration)
//	capEnd      the capability answer in hand
//	pubStart    oduflow_job.run publish sent (Hooks.Observe "publish" + Hooks.Published)
//	newStamp    the master's salt/job/<jid>/new event (_stamp)
//	retStamp    the minion's return event (_stamp)
//	proofStart  oduflow_job.attest published (Hooks.Observe "proof": end and duration); a receipt the
//	            run's own signed return proves makes no attest call: proofStart = proofEnd, proof = 0
//	proofEnd    the signed answer verified (without attest: the worker's step "returned")
//	outcome     the terminal result committed (Hooks.Outcome): Status now answers it
//
// apply = retStamp - newStamp (the minion's job, the master's delivery to it and the return included:
// the same convention as the e2e_ping row), capability = capEnd - capStart, proof = proofEnd -
// proofStart, rest = total - apply - capability - proof, itself split into the consecutive pieces below.

// cfgTrace is what the hooks and the bench's own event subscription saw of one request.
type cfgTrace struct {
	mu              sync.Mutex
	t0              time.Time
	capEnd          time.Time
	capDur          time.Duration
	lastPub         time.Duration // the latest Observe("publish"), paired with the Published that follows
	runPubStart     time.Time
	runPubEnd       time.Time
	proofEnd        time.Time
	proofDur        time.Duration
	proofs, polls   int
	steps           map[string]time.Time
	outcome         time.Time
	status          receipt.Status
	code            string
	done            chan struct{}
	unverifiedCount int
	// durable claim writes (timedStore): Create, the fenced intent, then plain CAS (dispatched, terminal)
	create, intent time.Duration
	cas            []time.Duration
}

func newTrace() *cfgTrace {
	return &cfgTrace{t0: time.Now(), steps: map[string]time.Time{}, done: make(chan struct{})}
}

// cfgHooks routes the dispatcher's hooks to the current request's trace (requests run one at a time).
type cfgHooks struct {
	mu  sync.Mutex
	cur *cfgTrace
}

func (h *cfgHooks) trace() *cfgTrace {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.cur
}

func (h *cfgHooks) set(t *cfgTrace) {
	h.mu.Lock()
	h.cur = t
	h.mu.Unlock()
}

func (h *cfgHooks) hooks() oduflow.Hooks {
	with := func(f func(t *cfgTrace, now time.Time)) {
		now := time.Now()
		if t := h.trace(); t != nil {
			t.mu.Lock()
			f(t, now)
			t.mu.Unlock()
		}
	}
	return oduflow.Hooks{
		Observe: func(_ context.Context, _ oduflow.RequestRef, op string, d time.Duration) {
			with(func(t *cfgTrace, now time.Time) {
				switch op {
				case "capabilities":
					t.capEnd, t.capDur = now, d
				case "publish":
					t.lastPub = d
				case "proof":
					t.proofEnd, t.proofDur = now, d
					t.proofs++
				case "poll":
					t.polls++
				}
			})
		},
		Published: func(_ context.Context, _ oduflow.RequestRef, fun, result string) {
			with(func(t *cfgTrace, now time.Time) {
				if fun == "oduflow_job.run" && result == "ok" {
					t.runPubStart, t.runPubEnd = now.Add(-t.lastPub), now
				}
			})
		},
		Step: func(_ context.Context, _ oduflow.RequestRef, step string) {
			with(func(t *cfgTrace, now time.Time) {
				if _, ok := t.steps[step]; !ok {
					t.steps[step] = now
				}
			})
		},
		Outcome: func(_ context.Context, _ oduflow.RequestRef, st receipt.Status, code string) {
			with(func(t *cfgTrace, now time.Time) {
				if t.outcome.IsZero() {
					t.outcome, t.status, t.code = now, st, code
					close(t.done)
				}
			})
		},
		UnverifiedEvent: func(context.Context, oduflow.RequestRef, string) {
			with(func(t *cfgTrace, _ time.Time) { t.unverifiedCount++ })
		},
	}
}

// timedStore times the claim store's durable writes for the current request's trace (the file store's
// leases pass through: they are its own, as CompareAndSwapHeld requires).
type timedStore struct {
	*filestore.Store
	h *cfgHooks
}

func (s timedStore) note(f func(t *cfgTrace, d time.Duration), t0 time.Time) {
	d := time.Since(t0)
	if t := s.h.trace(); t != nil {
		t.mu.Lock()
		f(t, d)
		t.mu.Unlock()
	}
}

func (s timedStore) Create(ctx context.Context, c *claims.Claim) error {
	defer s.note(func(t *cfgTrace, d time.Duration) { t.create = d }, time.Now())
	return s.Store.Create(ctx, c)
}

func (s timedStore) CompareAndSwapHeld(ctx context.Context, next *claims.Claim, held ...claims.Lease) (*claims.Claim, error) {
	defer s.note(func(t *cfgTrace, d time.Duration) { t.intent = d }, time.Now())
	return s.Store.CompareAndSwapHeld(ctx, next, held...)
}

func (s timedStore) CompareAndSwap(ctx context.Context, next *claims.Claim) (*claims.Claim, error) {
	defer s.note(func(t *cfgTrace, d time.Duration) { t.cas = append(t.cas, d) }, time.Now())
	return s.Store.CompareAndSwap(ctx, next)
}

// labJob is what the bench's own subscription saw of one oduflow_job.* job on the lab minion.
type labJob struct {
	fun                string
	arg0               string // the request id, for run/status/attest
	newStamp, retStamp time.Time
	retSeen            time.Time // this process received the return event
}

// labJobs records oduflow_job.* jobs of one minion from the master event bus.
type labJobs struct {
	mu   sync.Mutex
	jobs map[salt.JID]*labJob
}

func (l *labJobs) run(stream *salt.EventStream, minion string) {
	for ev := range stream.Events() {
		now := time.Now()
		switch {
		case ev.JobNew != nil && strings.HasPrefix(ev.JobNew.Fun, "oduflow_job."):
			j := &labJob{fun: ev.JobNew.Fun, newStamp: stamp(ev.Data)}
			if len(ev.JobNew.Args) > 0 {
				j.arg0, _ = ev.JobNew.Args[0].(string)
			}
			l.mu.Lock()
			if old := l.jobs[ev.JobNew.JID]; old != nil { // the return came first (two sockets)
				old.fun, old.arg0, old.newStamp = j.fun, j.arg0, j.newStamp
			} else {
				l.jobs[ev.JobNew.JID] = j
			}
			l.mu.Unlock()
		case ev.JobReturn != nil && ev.JobReturn.MinionID == minion && strings.HasPrefix(ev.JobReturn.Fun, "oduflow_job."):
			l.mu.Lock()
			j := l.jobs[ev.JobReturn.JID]
			if j == nil {
				j = &labJob{fun: ev.JobReturn.Fun}
				l.jobs[ev.JobReturn.JID] = j
			}
			if j.retSeen.IsZero() {
				j.retStamp, j.retSeen = stamp(ev.Data), now
			}
			l.mu.Unlock()
		}
	}
}

func (l *labJobs) get(jid salt.JID) (labJob, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	j := l.jobs[jid]
	if j == nil {
		return labJob{}, false
	}
	return *j, true
}

// jobIn is the last returned job of fun (and request, unless "") whose new event is within [from, to]
// (the master's microsecond stamps: a millisecond of slack).
func (l *labJobs) jobIn(fun, request string, from, to time.Time) (labJob, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var best labJob
	found := false
	for _, j := range l.jobs {
		if j.fun == fun && (request == "" || j.arg0 == request) && !j.retStamp.IsZero() &&
			!j.newStamp.Before(from.Add(-time.Millisecond)) && !j.newStamp.After(to) &&
			(!found || j.newStamp.After(best.newStamp)) {
			best, found = *j, true
		}
	}
	return best, found
}

// cfgSample is one request's breakdown.
type cfgSample struct {
	total, apply, capability, proof, rest time.Duration
	// rest, in consecutive pieces
	toCapability  time.Duration // t0 -> capStart: Start (claim create), worker launch, locks, quarantine scan
	capToPublish  time.Duration // capEnd -> pubStart: minion key, event watch, dispatch intent
	publishToNew  time.Duration // pubStart -> newStamp: the publish request until the master's new event
	retToProof    time.Duration // retStamp -> proofStart: return delivery to the worker
	proofToCommit time.Duration // proofEnd -> outcome: the terminal commit
	// for reference
	startCall    time.Duration // Start's own duration
	runPublish   time.Duration // oduflow_job.run publish round trip (overlaps apply)
	retDelivery  time.Duration // retStamp -> this process's own subscription received the return
	attestMinion time.Duration // the attest job's new -> ret span (the minion's part of the proof)
	capMinion    time.Duration // the capabilities job's new -> ret span
	// the durable claim writes on the critical path: Create (index entry + claim), the intent, the
	// terminal commit (the dispatched commit overlaps the apply); and the rest without them
	create, intent, terminal, restBeyondWrites time.Duration
	// the worker's steps (Hooks.Step): finer pieces of toCapability and capToPublish
	toClaimed, claimedToLease, leaseToCap, capToRecorded, recordedToPublish time.Duration
	unverified                                                              int // Hooks.UnverifiedEvent calls
}

// cmdConfigure: n sequential dispatched configure requests on the lab minion through one long-lived
// Dispatcher (default timers, file claim store under -dir, in-process workers), one warm-up request
// first. Each is timed from Start to the committed terminal result (Hooks.Outcome) and broken down as
// above. A request the minion refuses because another managed apply holds it (failed 0/1 with no
// apply: other users of the lab minion) is retried with a new request id, up to -retries times.
func cmdConfigure(ctx context.Context, args []string) (any, error) {
	fs := flag.NewFlagSet("configure", flag.ContinueOnError)
	n := fs.Int("n", 5, "configure requests")
	warmup := fs.Int("warmup", 1, "warm-up requests")
	base := fs.String("dir", "/var/cache", "claim directory parent")
	timeout := fs.Duration("timeout", 3*time.Minute, "per request")
	retries := fs.Int("retries", 10, "requests refused by a busy minion, retried")
	profile := fs.String("profile", "", "profile to dispatch (default: configure, or the lab minion's table's first sls profile)")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	env, err := readLab()
	if err != nil {
		return nil, err
	}
	table, prof, err := configureTarget(os.Getenv("ODUFLOW_SALTLAB_DIR"), *profile)
	if err != nil {
		return nil, err
	}
	pki := os.Getenv("ODUFLOW_SALT_PKI_DIR") // the lab's pki_dir; empty: Salt's default
	if pki == "" {
		pki = "/etc/salt/pki/master"
	}
	c, err := env.client()
	if err != nil {
		return nil, err
	}
	defer c.Close()
	dir, rm, err := claimDir(*base)
	if err != nil {
		return nil, err
	}
	defer rm()

	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := salt.SubscribeEvents(sctx, env.events, salt.WithTagPrefixes("salt/job/"), salt.WithLogger(benchkit.Discard()))
	if err != nil {
		return nil, err
	}
	defer stream.Close()
	jobs := &labJobs{jobs: map[salt.JID]*labJob{}}
	go jobs.run(stream, env.minion)

	h := &cfgHooks{}
	store, err := filestore.Open(dir)
	if err != nil {
		return nil, err
	}
	d, err := oduflow.New(c, oduflow.SaltEvents(env.events, salt.WithLogger(benchkit.Discard())),
		oduflow.WithClaimStore(timedStore{Store: store, h: h}), oduflow.WithPKIDir(pki),
		oduflow.WithLogger(benchkit.Discard()), oduflow.WithHooks(h.hooks()), oduflow.WithProfiles(table))
	if err != nil {
		return nil, err
	}
	defer func() { _ = d.Close(context.Background()) }() // its requests are final by then
	if r, err := d.Ping(ctx, env.minion); err != nil || !r.Ready() {
		return nil, fmt.Errorf("lab minion not ready: %+v %v", r, err)
	}

	var samples []cfgSample
	refused := 0
	for i := 0; i < *n+*warmup; {
		s, busy, err := configureOnce(ctx, d, h, jobs, env.minion, prof, *timeout)
		if err != nil {
			return nil, fmt.Errorf("request %d: %w", i, err)
		}
		if busy {
			refused++
			if refused > *retries {
				return nil, fmt.Errorf("the lab minion refused %d requests as busy", refused)
			}
			time.Sleep(2 * time.Second)
			continue
		}
		if i >= *warmup {
			samples = append(samples, s)
		}
		i++
	}
	pick := func(f func(cfgSample) time.Duration) benchkit.Summary {
		ds := make([]time.Duration, len(samples))
		for i, s := range samples {
			ds[i] = f(s)
		}
		return benchkit.Summarize(ds, time.Millisecond)
	}
	unverified := 0
	for _, s := range samples {
		unverified += s.unverified
	}
	return map[string]any{
		"n": len(samples), "refused_busy": refused, "profile": string(prof), "minion_ids": string(table.MinionIDs()), "unverified_events": unverified,
		"total_ms":      pick(func(s cfgSample) time.Duration { return s.total }),
		"apply_ms":      pick(func(s cfgSample) time.Duration { return s.apply }),
		"capability_ms": pick(func(s cfgSample) time.Duration { return s.capability }),
		"proof_ms":      pick(func(s cfgSample) time.Duration { return s.proof }),
		"rest_ms":       pick(func(s cfgSample) time.Duration { return s.rest }),
		"claim_writes_ms": map[string]benchkit.Summary{
			"create":   pick(func(s cfgSample) time.Duration { return s.create }),
			"intent":   pick(func(s cfgSample) time.Duration { return s.intent }),
			"terminal": pick(func(s cfgSample) time.Duration { return s.terminal }),
			"sum":      pick(func(s cfgSample) time.Duration { return s.create + s.intent + s.terminal }),
		},
		"rest_beyond_writes_ms": pick(func(s cfgSample) time.Duration { return s.restBeyondWrites }),
		"rest_parts_ms": map[string]benchkit.Summary{
			"to_capability":   pick(func(s cfgSample) time.Duration { return s.toCapability }),
			"cap_to_publish":  pick(func(s cfgSample) time.Duration { return s.capToPublish }),
			"publish_to_new":  pick(func(s cfgSample) time.Duration { return s.publishToNew }),
			"ret_to_proof":    pick(func(s cfgSample) time.Duration { return s.retToProof }),
			"proof_to_commit": pick(func(s cfgSample) time.Duration { return s.proofToCommit }),
		},
		"reference_ms": map[string]benchkit.Summary{
			"start_call":             pick(func(s cfgSample) time.Duration { return s.startCall }),
			"run_publish":            pick(func(s cfgSample) time.Duration { return s.runPublish }),
			"ret_delivery":           pick(func(s cfgSample) time.Duration { return s.retDelivery }),
			"attest_minion":          pick(func(s cfgSample) time.Duration { return s.attestMinion }),
			"capability_minion":      pick(func(s cfgSample) time.Duration { return s.capMinion }),
			"start_to_claimed":       pick(func(s cfgSample) time.Duration { return s.toClaimed }),
			"claimed_to_lease":       pick(func(s cfgSample) time.Duration { return s.claimedToLease }),
			"lease_to_capability":    pick(func(s cfgSample) time.Duration { return s.leaseToCap }),
			"capability_to_recorded": pick(func(s cfgSample) time.Duration { return s.capToRecorded }),
			"recorded_to_publish":    pick(func(s cfgSample) time.Duration { return s.recordedToPublish }),
		},
	}, nil
}

// configureOnce runs one request to its terminal result. busy: the minion refused it without applying
// (another managed apply held it), to be retried.
func configureOnce(ctx context.Context, d *oduflow.Dispatcher, h *cfgHooks, jobs *labJobs, minion string, prof receipt.Profile, timeout time.Duration) (cfgSample, bool, error) {
	req := uuid.NewString()
	t := newTrace()
	h.set(t)
	defer h.set(nil)
	resp, err := d.Start(ctx, minion, req, prof)
	startCall := time.Since(t.t0)
	if err != nil {
		return cfgSample{}, false, err
	}
	if resp.JID == nil {
		return cfgSample{}, false, fmt.Errorf("start: no jid: %+v", resp)
	}
	select {
	case <-t.done:
	case <-time.After(timeout):
		return cfgSample{}, false, fmt.Errorf("no terminal result within %s", timeout)
	case <-ctx.Done():
		return cfgSample{}, false, ctx.Err()
	}
	if err := d.Wait(ctx); err != nil {
		return cfgSample{}, false, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.status == receipt.StatusFailed {
		if r, err := d.Status(ctx, minion, req, prof); err == nil && r.Passed == 0 && r.Total == 1 {
			return cfgSample{}, true, nil // the minion's exec lock was busy: no apply ran
		}
	}
	if t.status != receipt.StatusSucceeded {
		return cfgSample{}, false, fmt.Errorf("request %s ended %s (code %q)", req, t.status, t.code)
	}
	if t.proofs > 1 || t.steps["returned"].IsZero() || t.polls != 0 || t.capEnd.IsZero() || t.runPubStart.IsZero() || len(t.cas) != 2 {
		return cfgSample{}, false, fmt.Errorf("unexpected path: %d proofs, %d polls, capability seen %v, run published %v, %d commits",
			t.proofs, t.polls, !t.capEnd.IsZero(), !t.runPubStart.IsZero(), len(t.cas))
	}
	// The return event may reach this process's subscription a moment after the worker's.
	var job labJob
	for wait := time.Now().Add(2 * time.Second); ; {
		j, ok := jobs.get(salt.JID(*resp.JID))
		if ok && !j.newStamp.IsZero() && !j.retStamp.IsZero() {
			job = j
			break
		}
		if time.Now().After(wait) {
			return cfgSample{}, false, fmt.Errorf("the run job's new/ret events were not seen on the bus")
		}
		time.Sleep(5 * time.Millisecond)
	}
	s := t.sample(job, startCall)
	if err := s.check(); err != nil {
		return cfgSample{}, false, fmt.Errorf("request %s: %w", req, err)
	}
	capStart, proofStart := t.capEnd.Add(-t.capDur), t.proofEnd.Add(-t.proofDur)
	if a, ok := jobs.jobIn("oduflow_job.attest", req, proofStart, t.proofEnd); ok && t.proofs == 1 {
		s.attestMinion = a.retStamp.Sub(a.newStamp)
	}
	if a, ok := jobs.jobIn("oduflow_job.capabilities", "", capStart, t.capEnd); ok {
		s.capMinion = a.retStamp.Sub(a.newStamp)
	}
	return s, false, nil
}

// sample breaks one traced request down (t holds a complete trace: one capability check, one run
// publish, one proof, the two plain commits; job is the run job as the bus showed it).
func (t *cfgTrace) sample(job labJob, startCall time.Duration) cfgSample {
	capStart := t.capEnd.Add(-t.capDur)
	proofEnd, proofDur := t.proofEnd, t.proofDur
	if t.proofs == 0 { // proven by the run's own signed return: no attest call
		proofEnd, proofDur = t.steps["returned"], 0
	}
	proofStart := proofEnd.Add(-proofDur)
	s := cfgSample{
		total:         t.outcome.Sub(t.t0),
		apply:         job.retStamp.Sub(job.newStamp),
		capability:    t.capDur,
		proof:         proofDur,
		toCapability:  capStart.Sub(t.t0),
		capToPublish:  t.runPubStart.Sub(t.capEnd),
		publishToNew:  job.newStamp.Sub(t.runPubStart),
		retToProof:    proofStart.Sub(job.retStamp),
		proofToCommit: t.outcome.Sub(proofEnd),
		startCall:     startCall,
		runPublish:    t.runPubEnd.Sub(t.runPubStart),
		retDelivery:   job.retSeen.Sub(job.retStamp),
	}
	s.rest = s.total - s.apply - s.capability - s.proof
	s.create, s.intent, s.terminal = t.create, t.intent, t.cas[len(t.cas)-1]
	s.restBeyondWrites = s.rest - s.create - s.intent - s.terminal
	s.toClaimed = t.steps["claimed"].Sub(t.t0)
	s.claimedToLease = t.steps["lease"].Sub(t.steps["claimed"])
	s.leaseToCap = capStart.Sub(t.steps["lease"])
	s.capToRecorded = t.steps["dispatch_recorded"].Sub(t.capEnd)
	s.recordedToPublish = t.runPubStart.Sub(t.steps["dispatch_recorded"])
	s.unverified = t.unverifiedCount
	return s
}

// stampSlack: the master's _stamps have microseconds and come from another process's reading of the
// same clock; a piece bounded by one of them may come out this much below zero.
const stampSlack = time.Millisecond

// check refuses a breakdown whose phases are out of order: every piece non-negative (up to stampSlack
// where a master stamp bounds it), each durable write inside its piece, the rest the sum of its pieces.
func (s cfgSample) check() error {
	parts := s.toCapability + s.capToPublish + s.publishToNew + s.retToProof + s.proofToCommit
	if d := parts - s.rest; d > time.Microsecond || d < -time.Microsecond {
		return fmt.Errorf("the rest's pieces sum to %v, not %v", parts, s.rest)
	}
	for name, v := range map[string]time.Duration{"to_capability": s.toCapability, "cap_to_publish": s.capToPublish,
		"proof_to_commit": s.proofToCommit, "apply": s.apply, "capability": s.capability, "proof": s.proof} {
		if v < 0 {
			return fmt.Errorf("phase %s negative (%v): out of order", name, v)
		}
	}
	for name, v := range map[string]time.Duration{"publish_to_new": s.publishToNew, "ret_to_proof": s.retToProof} {
		if v < -stampSlack {
			return fmt.Errorf("phase %s negative (%v): the bus stamps disagree with this clock", name, v)
		}
	}
	// Each durable write lies inside its piece: the claim create before the capability call, the intent
	// between the capability answer and the publish, the terminal commit after the proof.
	if s.create > s.toCapability || s.intent > s.capToPublish || s.terminal > s.proofToCommit {
		return fmt.Errorf("a durable write outside its phase: create %v of %v, intent %v of %v, terminal %v of %v",
			s.create, s.toCapability, s.intent, s.capToPublish, s.terminal, s.proofToCommit)
	}
	return nil
}
