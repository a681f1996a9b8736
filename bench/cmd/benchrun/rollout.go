package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/oduflow/oduflow-go/bench/internal/benchkit"
	"github.com/oduflow/oduflow-go/oduflow"
	"github.com/oduflow/oduflow-go/receipt"
	"github.com/oduflow/oduflow-go/salt"
)

// The rollout row: configure on every minion of the lab's fleet (ODUFLOW_SALT_FLEET, saltlab.sh fleet 40)
// at once, through the dispatcher (one request per minion: claim, capability check, at-most-once
// publication of oduflow_job.run, receipt, signed proof, terminal commit), timed from the first Start to
// the last committed terminal result; against what an operator types instead: one
// `salt -L <the fleet> state.apply roles.client_stack` through Salt's own CLI (the lab's bin/salt
// wrapper), timed from the command's start to its exit (its Python start-up included: that is what the
// operator waits for). Both sides report their own CPU and the Salt side's (the master and the fleet
// minions, their reaped job processes included), so the row says where the time went.

// fleetIDs is ODUFLOW_SALT_FLEET: the fleet's minion ids, comma-separated.
func fleetIDs() ([]string, error) {
	v := os.Getenv("ODUFLOW_SALT_FLEET")
	if v == "" {
		return nil, fmt.Errorf("ODUFLOW_SALT_FLEET is not set (saltlab.sh fleet N, then saltlab.sh env)")
	}
	ids := strings.Split(v, ",")
	for _, id := range ids {
		if id == "" {
			return nil, fmt.Errorf("ODUFLOW_SALT_FLEET has an empty id")
		}
	}
	return ids, nil
}

// saltSideCPU is the CPU time so far of the lab's master and of its fleet minions: every live process
// whose command line (Salt rewrites it with setproctitle) runs salt-master with the lab's config, or
// salt-minion with a fleet minion's config, with the CPU of its reaped children (a minion's job processes
// with multiprocessing: True).
func saltSideCPU(labDir string) (master, minions time.Duration) {
	masterArg := "salt-master -c " + filepath.Join(labDir, "etc")
	fleetArg := "-c " + filepath.Join(labDir, "fleet") + "/"
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		cmd := strings.ReplaceAll(string(b), "\x00", " ")
		switch {
		case strings.Contains(cmd, masterArg+" ") || strings.HasSuffix(strings.TrimSpace(cmd), masterArg):
			master += procCPUWithChildren(e.Name())
		case strings.Contains(cmd, "salt-minion") && strings.Contains(cmd, fleetArg):
			minions += procCPUWithChildren(e.Name())
		}
	}
	return master, minions
}

// procCPUWithChildren is utime + stime + cutime + cstime of one process.
func procCPUWithChildren(pid string) time.Duration { return procStatCPU(pid, true) }

// rolloutReq is what the hooks saw of one request.
type rolloutReq struct {
	runPublished, capWaits, proofs, polls int
	outcome                               time.Time
	// the request's timeline (this host's clock): its capability check (a kept answer: none), the run's
	// publish reply, the proven return in hand, and the proof call's own duration
	capDur, proofDur            time.Duration
	capEnd, published, returned time.Time
	status                      receipt.Status
	code                        string
}

type rolloutHooks struct {
	mu      sync.Mutex
	reqs    map[string]*rolloutReq // by request id
	capPubs int                    // oduflow_job.capabilities publications (batched: they name no request)
	attests int
	done    chan struct{}
	left    int
}

func (h *rolloutHooks) req(id string) *rolloutReq {
	r := h.reqs[id]
	if r == nil {
		r = &rolloutReq{}
		h.reqs[id] = r
	}
	return r
}

func (h *rolloutHooks) hooks() oduflow.Hooks {
	return oduflow.Hooks{
		Published: func(_ context.Context, ref oduflow.RequestRef, fun, result string) {
			h.mu.Lock()
			defer h.mu.Unlock()
			switch {
			case fun == "oduflow_job.capabilities" && result == "ok":
				h.capPubs++
			case fun == "oduflow_job.attest" && result == "ok":
				h.attests++
			case fun == "oduflow_job.run" && result == "ok" && ref.RequestID != "":
				r := h.req(ref.RequestID)
				r.runPublished++
				r.published = time.Now()
			}
		},
		Step: func(_ context.Context, ref oduflow.RequestRef, step string) {
			if step != "returned" || ref.RequestID == "" {
				return
			}
			h.mu.Lock()
			defer h.mu.Unlock()
			if r := h.req(ref.RequestID); r.returned.IsZero() {
				r.returned = time.Now()
			}
		},
		Observe: func(_ context.Context, ref oduflow.RequestRef, op string, d time.Duration) {
			if ref.RequestID == "" {
				return
			}
			h.mu.Lock()
			defer h.mu.Unlock()
			switch op {
			case "capabilities":
				r := h.req(ref.RequestID)
				r.capWaits++
				r.capDur, r.capEnd = d, time.Now()
			case "proof":
				r := h.req(ref.RequestID)
				r.proofs++
				r.proofDur = d
			case "poll":
				h.req(ref.RequestID).polls++
			}
		},
		Outcome: func(_ context.Context, ref oduflow.RequestRef, st receipt.Status, code string) {
			now := time.Now()
			h.mu.Lock()
			defer h.mu.Unlock()
			r := h.req(ref.RequestID)
			if !r.outcome.IsZero() {
				return
			}
			r.outcome, r.status, r.code = now, st, code
			if h.left--; h.left == 0 {
				close(h.done)
			}
		},
	}
}

// cmdRollout: one round of the dispatcher side. One Dispatcher (file claim store under -dir, default
// timers) is made and its event subscription is up before the clock starts; then one configure request
// per fleet minion is started at once (one goroutine each), and the round ends when every request has a
// committed terminal result. It fails unless every request succeeded with exactly one oduflow_job.run
// publication and a proven receipt (the worker's step "returned": the run's own signed return, or an
// oduflow_job.attest answer, "proofs" counting the latter).
func cmdRollout(ctx context.Context, args []string) (any, error) {
	fs := flag.NewFlagSet("rollout", flag.ContinueOnError)
	base := fs.String("dir", "/var/cache", "claim directory parent")
	timeout := fs.Duration("timeout", 5*time.Minute, "the whole rollout")
	reuse := fs.Duration("capability-reuse", 0, "Timers.CapabilityReuse (0: every preflight asks its minion)")
	pingFirst := fs.Bool("ping-first", false, "Ping every fleet minion before the clock starts (a readiness check)")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	env, err := readLab()
	if err != nil {
		return nil, err
	}
	ids, err := fleetIDs()
	if err != nil {
		return nil, err
	}
	labDir := os.Getenv("ODUFLOW_SALTLAB_DIR")
	pki := os.Getenv("ODUFLOW_SALT_PKI_DIR")
	if labDir == "" || pki == "" {
		return nil, fmt.Errorf("ODUFLOW_SALTLAB_DIR and ODUFLOW_SALT_PKI_DIR must be set (saltlab.sh env)")
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
	h := &rolloutHooks{reqs: map[string]*rolloutReq{}, done: make(chan struct{}), left: len(ids)}
	timers := oduflow.DefaultTimers()
	timers.CapabilityReuse = *reuse
	d, err := oduflow.New(c, oduflow.SaltEvents(env.events, salt.WithLogger(benchkit.Discard())),
		oduflow.WithClaimDir(dir), oduflow.WithPKIDir(pki), oduflow.WithTimers(timers),
		oduflow.WithLogger(benchkit.Discard()), oduflow.WithHooks(h.hooks()))
	if err != nil {
		return nil, err
	}
	defer func() { _ = d.Close(context.Background()) }()
	// The dispatcher's bus subscription and a connection to the master, before the clock starts.
	if r, err := d.Ping(ctx, env.minion); err != nil || !r.Ready() {
		return nil, fmt.Errorf("lab minion not ready: %+v %v", r, err)
	}
	if *pingFirst {
		perr := make([]error, len(ids))
		var pg sync.WaitGroup
		for i := range ids {
			pg.Add(1)
			go func(i int) {
				defer pg.Done()
				r, err := d.Ping(ctx, ids[i])
				if err == nil && !r.Ready() {
					err = fmt.Errorf("not ready: %+v", r)
				}
				perr[i] = err
			}(i)
		}
		pg.Wait()
		for i, err := range perr {
			if err != nil {
				return nil, fmt.Errorf("ping %s: %w", ids[i], err)
			}
		}
		h.mu.Lock()
		h.capPubs, h.attests = 0, 0 // the rollout's own publications only
		h.mu.Unlock()
	}

	reqs := make([]string, len(ids))
	for i := range ids {
		reqs[i] = uuid.NewString()
	}
	cpu0 := benchkit.CPUTime()
	m0, f0 := saltSideCPU(labDir)
	t0 := time.Now()
	errs := make([]error, len(ids))
	startDur := make([]time.Duration, len(ids))
	var wg sync.WaitGroup
	for i := range ids {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			s := time.Now()
			_, errs[i] = d.Start(ctx, ids[i], reqs[i], receipt.ProfileConfigure)
			startDur[i] = time.Since(s)
		}(i)
	}
	wg.Wait()
	allStarted := time.Since(t0)
	for i, err := range errs {
		if err != nil {
			return nil, fmt.Errorf("start on %s: %w", ids[i], err)
		}
	}
	select {
	case <-h.done:
	case <-time.After(*timeout):
		h.mu.Lock()
		left := h.left
		h.mu.Unlock()
		return nil, fmt.Errorf("%d of %d requests had no terminal result within %s", left, len(ids), *timeout)
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	h.mu.Lock()
	var last time.Time
	var terminal []time.Duration
	// per request: Start -> the capability check began (lease, quarantine scan, queueing), the check,
	// its answer -> the run's publish reply (intent, publish), that reply -> the proven return in hand
	// (the minion's apply and the proof), the proof call alone, the return -> the committed result
	var toCap, capD, capToPub, pubToRet, proofD, retToCommit []time.Duration
	proofs, polls, capWaits := 0, 0, 0
	var bad []string
	for i, id := range reqs {
		r := h.reqs[id]
		if r.outcome.After(last) {
			last = r.outcome
		}
		terminal = append(terminal, r.outcome.Sub(t0))
		if !r.capEnd.IsZero() {
			toCap = append(toCap, r.capEnd.Add(-r.capDur).Sub(t0))
			capD = append(capD, r.capDur)
			capToPub = append(capToPub, r.published.Sub(r.capEnd))
		} else {
			capToPub = append(capToPub, r.published.Sub(t0))
		}
		pubToRet = append(pubToRet, r.returned.Sub(r.published))
		proofD = append(proofD, r.proofDur)
		retToCommit = append(retToCommit, r.outcome.Sub(r.returned))
		proofs += r.proofs
		polls += r.polls
		capWaits += r.capWaits
		if r.status != receipt.StatusSucceeded || r.runPublished != 1 || r.returned.IsZero() {
			bad = append(bad, fmt.Sprintf("%s: %s (code %q), %d run publications, proven %v", ids[i], r.status, r.code,
				r.runPublished, !r.returned.IsZero()))
		}
	}
	capPubs, attests := h.capPubs, h.attests
	h.mu.Unlock()
	wall := last.Sub(t0)
	cpu := benchkit.CPUTime() - cpu0
	m1, f1 := saltSideCPU(labDir)
	if len(bad) > 0 {
		sort.Strings(bad)
		return nil, fmt.Errorf("%d of %d requests not a single proven success: %s", len(bad), len(ids), strings.Join(bad, "; "))
	}
	if err := d.Wait(ctx); err != nil {
		return nil, err
	}
	return map[string]any{
		"minions": len(ids), "wall_s": benchkit.Round3(wall.Seconds()),
		"capability_reuse_s": reuse.Seconds(), "ping_first": *pingFirst,
		"all_started_ms": benchkit.Round3(float64(allStarted) / float64(time.Millisecond)),
		"start_ms":       benchkit.Summarize(startDur, time.Millisecond),
		"terminal_ms":    benchkit.Summarize(terminal, time.Millisecond),
		"per_request_ms": map[string]benchkit.Summary{
			"start_to_capability":   benchkit.Summarize(toCap, time.Millisecond),
			"capability":            benchkit.Summarize(capD, time.Millisecond),
			"capability_to_publish": benchkit.Summarize(capToPub, time.Millisecond),
			"publish_to_proven":     benchkit.Summarize(pubToRet, time.Millisecond),
			"proof":                 benchkit.Summarize(proofD, time.Millisecond),
			"returned_to_committed": benchkit.Summarize(retToCommit, time.Millisecond),
		},
		"client_cpu_s":         benchkit.Round3(cpu.Seconds()),
		"master_cpu_s":         benchkit.Round3((m1 - m0).Seconds()),
		"minions_cpu_s":        benchkit.Round3((f1 - f0).Seconds()),
		"capability_publishes": capPubs, "capability_waits": capWaits,
		"attest_publishes": attests, "proofs": proofs, "polls": polls,
	}, nil
}

// cmdRolloutSalt: one round of the anchor: `salt -L <the fleet> state.apply roles.client_stack` through
// the lab's salt wrapper (-salt), JSON output; it fails unless every minion returned and every state of
// every minion is true.
func cmdRolloutSalt(ctx context.Context, args []string) (any, error) {
	fs := flag.NewFlagSet("rollout_salt", flag.ContinueOnError)
	saltBin := fs.String("salt", "", "the salt CLI (default $ODUFLOW_SALTLAB_DIR/bin/salt)")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	ids, err := fleetIDs()
	if err != nil {
		return nil, err
	}
	labDir := os.Getenv("ODUFLOW_SALTLAB_DIR")
	if labDir == "" {
		return nil, fmt.Errorf("ODUFLOW_SALTLAB_DIR must be set (saltlab.sh env)")
	}
	if *saltBin == "" {
		*saltBin = filepath.Join(labDir, "bin", "salt")
	}
	cmd := exec.CommandContext(ctx, *saltBin, "-L", strings.Join(ids, ","), "state.apply", "roles.client_stack",
		"--out=json", "--static", "-t", "120")
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	m0, f0 := saltSideCPU(labDir)
	t0 := time.Now()
	err = cmd.Run()
	wall := time.Since(t0)
	m1, f1 := saltSideCPU(labDir)
	if err != nil {
		return nil, fmt.Errorf("salt -L state.apply: %w (%s)", err, strings.TrimSpace(lastLine(stderr.String())))
	}
	var res map[string]map[string]struct {
		Result bool `json:"result"`
	}
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		return nil, fmt.Errorf("salt -L state.apply: output not the expected JSON: %w", err)
	}
	var bad []string
	for _, id := range ids {
		states, ok := res[id]
		if !ok || len(states) == 0 {
			bad = append(bad, id+": no return")
			continue
		}
		for name, s := range states {
			if !s.Result {
				bad = append(bad, id+": "+name+" not true")
			}
		}
	}
	if len(bad) > 0 {
		return nil, fmt.Errorf("%d problems: %s", len(bad), strings.Join(bad, "; "))
	}
	st := cmd.ProcessState
	return map[string]any{
		"minions": len(ids), "wall_s": benchkit.Round3(wall.Seconds()),
		"client_cpu_s": benchkit.Round3((st.UserTime() + st.SystemTime()).Seconds()),
		"master_cpu_s": benchkit.Round3((m1 - m0).Seconds()), "minions_cpu_s": benchkit.Round3((f1 - f0).Seconds()),
	}, nil
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}
