package main

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/oduflow/oduflow-go/salt"
	"github.com/oduflow/oduflow-go/salt/saltcmd"
)

// ours is the client under test.
type ours struct {
	c *saltcmd.Client
}

func newOurs(cfg config) (*ours, error) {
	pub, err := salt.NewClient(cfg.master, salt.WithAuth(salt.UserKey("root", cfg.keyFile)))
	if err != nil {
		return nil, err
	}
	c, err := saltcmd.New(pub, cfg.events)
	if err != nil {
		return nil, err
	}
	return &ours{c: c}, nil
}

// runOnce runs cmd and returns the times to the first and the last result and the results.
func (o *ours) runOnce(ctx context.Context, cmd saltcmd.Cmd) (first, last time.Duration, rs []saltcmd.Result, err error) {
	start := time.Now()
	job, err := o.c.Run(ctx, cmd)
	if err != nil {
		return 0, 0, nil, err
	}
	for r := range job.Results() {
		if first == 0 {
			first = time.Since(start)
		}
		rs = append(rs, r)
	}
	return first, time.Since(start), rs, nil
}

type report struct {
	Rounds map[string][]map[string]float64 `json:"rounds"`
	Lost   map[string]*lostTally           `json:"lost,omitempty"`
	Notes  []string                        `json:"notes,omitempty"`
}

func (r *report) add(row string, m map[string]float64) { r.Rounds[row] = append(r.Rounds[row], m) }

func returnedOK(rs []saltcmd.Result) int {
	n := 0
	for _, r := range rs {
		if r.OK() {
			n++
		}
	}
	return n
}

// pingRow: test.ping on ids; each round runs ours, LocalClient.cmd and LocalClient.cmd_iter in
// a rotating order, after one warm-up round that is not counted.
func pingRow(rep *report, o *ours, py *anchor, ids []string, rounds int) error {
	row := fmt.Sprintf("ping_%d", len(ids))
	fmt.Fprintf(stderr, "clientbench: %s, %d rounds\n", row, rounds)
	cmd := saltcmd.Cmd{Target: salt.ListTarget(ids...), Fun: "test.ping"}
	req := map[string]any{"tgt": ids, "fun": "test.ping", "timeout": 5, "gather": 10}
	for round := -1; round < rounds; round++ {
		m := map[string]float64{}
		steps := []func() error{
			func() error {
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				first, last, rs, err := o.runOnce(ctx, cmd)
				m["ours_first_ms"], m["ours_last_ms"], m["ours_returned"] = ms(first), ms(last), float64(returnedOK(rs))
				return err
			},
			func() error {
				req["op"] = "cmd"
				a, err := py.call(req)
				m["cmd_last_ms"], m["cmd_returned"] = a.LastS*1000, float64(len(a.Returned))
				return err
			},
			func() error {
				req["op"] = "cmd_iter"
				a, err := py.call(req)
				m["iter_first_ms"], m["iter_last_ms"], m["iter_returned"] = a.FirstS*1000, a.LastS*1000, float64(len(a.Returned))
				return err
			},
		}
		for i := range steps {
			if err := steps[(i+max(round, 0))%len(steps)](); err != nil {
				return fmt.Errorf("%s round %d: %w", row, round, err)
			}
		}
		if round >= 0 {
			rep.add(row, m)
		}
	}
	return nil
}

// batchRow: cmd.run 'sleep 1' on ids, 5 at a time; ours and LocalClient.cmd_batch alternate.
func batchRow(rep *report, o *ours, py *anchor, ids []string, rounds int) error {
	fmt.Fprintf(stderr, "clientbench: batch, %d rounds\n", rounds)
	cmd := saltcmd.Cmd{Target: salt.ListTarget(ids...), Fun: "cmd.run", Args: []any{"sleep 1"}}
	for round := 0; round < rounds; round++ {
		m := map[string]float64{}
		oursStep := func() error {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			start := time.Now()
			job, err := o.c.Batch(ctx, cmd, saltcmd.BatchSize{Count: 5})
			if err != nil {
				return err
			}
			n := 0
			for r := range job.Results() {
				if r.OK() {
					n++
				}
			}
			m["ours_ms"], m["ours_returned"] = ms(time.Since(start)), float64(n)
			return nil
		}
		pyStep := func() error {
			a, err := py.call(map[string]any{"op": "batch", "tgt": ids, "fun": "cmd.run", "arg": []any{"sleep 1"},
				"batch": 5, "timeout": 5, "gather": 10})
			m["salt_ms"], m["salt_returned"] = a.LastS*1000, float64(len(a.Returned))
			return err
		}
		first, second := oursStep, pyStep
		if round%2 == 1 {
			first, second = pyStep, oursStep
		}
		if err := first(); err != nil {
			return fmt.Errorf("batch round %d: %w", round, err)
		}
		if err := second(); err != nil {
			return fmt.Errorf("batch round %d: %w", round, err)
		}
		rep.add("batch_20_b5", m)
	}
	return nil
}

// lostTally counts what one client delivered over the lost row's runs.
type lostTally struct {
	Runs        int            `json:"runs"`
	Expected    int            `json:"expected"`    // minions expected over all runs
	Returned    int            `json:"returned"`    // returns delivered
	Named       int            `json:"named"`       // minions reported as not returned, with a state
	Unaccounted int            `json:"unaccounted"` // neither returned nor named
	States      map[string]int `json:"states,omitempty"`
	CompleteRun int            `json:"complete_runs"` // runs where every minion returned
	Seconds     float64        `json:"seconds"`
}

// lostRow: runs of test.ping on the whole fleet, ours then LocalClient.cmd_iter (or both at once,
// -lost-together), while a random fleet minion is restarted every restartEvery.
func lostRow(rep *report, o *ours, py *anchor, cfg config, lc lostConfig) error {
	runs, restartEvery, timeout := lc.runs, lc.restartEvery, lc.timeout
	began := time.Now()
	fmt.Fprintf(stderr, "clientbench: lost, %d runs per client, a restart every %s\n", runs, restartEvery)
	fl, err := openFleet(cfg)
	if err != nil {
		return err
	}
	ids := cfg.fleet
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var restarts atomic.Int64
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(restartEvery)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				id := ids[rand.IntN(len(ids))]
				if err := fl.restart(id); err != nil {
					fmt.Fprintf(stderr, "clientbench: restart %s: %v\n", id, err)
					continue
				}
				restarts.Add(1)
			}
		}
	}()
	tOurs := &lostTally{States: map[string]int{}}
	tPy := &lostTally{}
	secs := int(timeout / time.Second)
	cmd := saltcmd.Cmd{Target: salt.ListTarget(ids...), Fun: "test.ping", Timeout: timeout, GatherJobTimeout: timeout}
	for i := 0; i < runs; i++ {
		if lc.budget > 0 && time.Since(began) > lc.budget {
			rep.Notes = append(rep.Notes, fmt.Sprintf("lost row: stopped by its time budget (%s) after %d of %d runs per client", lc.budget, i, runs))
			break
		}
		var rs []saltcmd.Result
		var oursErr error
		var oursSecs float64
		var wgRun sync.WaitGroup
		wgRun.Add(1)
		go func() {
			defer wgRun.Done()
			start := time.Now()
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			_, _, rs, oursErr = o.runOnce(ctx, cmd)
			cancel()
			oursSecs = time.Since(start).Seconds()
		}()
		if !lc.together {
			wgRun.Wait()
		}
		start := time.Now()
		a, err := py.call(map[string]any{"op": "cmd_iter", "tgt": ids, "fun": "test.ping", "timeout": secs, "gather": secs})
		pySecs := time.Since(start).Seconds()
		wgRun.Wait()
		if oursErr != nil {
			fmt.Fprintf(stderr, "clientbench: ours run %d: %v\n", i, oursErr)
		}
		tOurs.Seconds += oursSecs
		tOurs.Runs++
		tOurs.Expected += len(ids)
		seen := map[string]bool{}
		for _, r := range rs {
			seen[r.Minion] = true
			if r.State == saltcmd.Returned {
				tOurs.Returned++
			} else {
				tOurs.Named++
				tOurs.States[r.State.String()]++
			}
		}
		tOurs.Unaccounted += len(ids) - len(seen)
		if allReturned(rs, len(ids)) {
			tOurs.CompleteRun++
		}
		if err != nil {
			fmt.Fprintf(stderr, "clientbench: cmd_iter run %d: %v\n", i, err)
		}
		tPy.Seconds += pySecs
		tPy.Runs++
		tPy.Expected += len(ids)
		tPy.Returned += len(a.Returned)
		tPy.Unaccounted += len(ids) - len(a.Returned) // cmd_iter names no minion that did not return
		if len(a.Returned) == len(ids) {
			tPy.CompleteRun++
		}
		if (i+1)%20 == 0 {
			fmt.Fprintf(stderr, "clientbench: lost: %d runs each, %d restarts; ours %d returned %d named %d unaccounted; cmd_iter %d returned %d unaccounted\n",
				i+1, restarts.Load(), tOurs.Returned, tOurs.Named, tOurs.Unaccounted, tPy.Returned, tPy.Unaccounted)
		}
	}
	close(stop)
	wg.Wait()
	rep.Lost = map[string]*lostTally{"ours": tOurs, "cmd_iter": tPy}
	how := "one after the other"
	if lc.together {
		how = "together"
	}
	rep.Notes = append(rep.Notes, fmt.Sprintf("lost row: the two clients ran each test.ping %s (timeout and gather_job_timeout %ds); %d fleet minion restarts (one every %s) during the runs", how, secs, restarts.Load(), restartEvery))
	return fl.waitAllUp(o, ids)
}

func allReturned(rs []saltcmd.Result, n int) bool {
	c := 0
	for _, r := range rs {
		if r.State == saltcmd.Returned {
			c++
		}
	}
	return c == n
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// stats are the median and the spread of one measure over the rounds.
type stats struct{ med, lo, hi float64 }

func statsOf(rounds []map[string]float64, key string) (stats, bool) {
	var xs []float64
	for _, m := range rounds {
		if v, ok := m[key]; ok {
			xs = append(xs, v)
		}
	}
	if len(xs) == 0 {
		return stats{}, false
	}
	sort.Float64s(xs)
	med := xs[len(xs)/2]
	if len(xs)%2 == 0 {
		med = (xs[len(xs)/2-1] + xs[len(xs)/2]) / 2
	}
	return stats{med: med, lo: xs[0], hi: xs[len(xs)-1]}, true
}

func (s stats) String() string { return fmt.Sprintf("%.1f (%.1f-%.1f)", s.med, s.lo, s.hi) }

func (r *report) print(w io.Writer) {
	keys := make([]string, 0, len(r.Rounds))
	labRows := false
	for k := range r.Rounds {
		keys = append(keys, k)
		labRows = labRows || !strings.HasPrefix(k, "inprocess")
	}
	slices.Sort(keys)
	if labRows {
		fmt.Fprintln(w, "| row | measure (ms, median (min-max)) | ours | Salt | ours/Salt |")
		fmt.Fprintln(w, "| --- | --- | --- | --- | --- |")
	}
	for _, row := range keys {
		rs := r.Rounds[row]
		if strings.HasPrefix(row, "inprocess") {
			continue // its own table, below
		}
		var pairs [][3]string
		if strings.HasPrefix(row, "ping") {
			pairs = [][3]string{{"publish -> last return vs LocalClient.cmd", "ours_last_ms", "cmd_last_ms"},
				{"first return vs cmd_iter first", "ours_first_ms", "iter_first_ms"},
				{"last return vs cmd_iter last", "ours_last_ms", "iter_last_ms"}}
		} else {
			pairs = [][3]string{{"wall time vs LocalClient.cmd_batch", "ours_ms", "salt_ms"}}
		}
		for _, p := range pairs {
			a, ok1 := statsOf(rs, p[1])
			b, ok2 := statsOf(rs, p[2])
			if !ok1 || !ok2 {
				continue
			}
			fmt.Fprintf(w, "| %s (%d rounds) | %s | %s | %s | %.2fx |\n", row, len(rs), p[0], a, b, a.med/b.med)
		}
		for _, k := range []string{"ours_returned", "cmd_returned", "iter_returned", "salt_returned"} {
			if s, ok := statsOf(rs, k); ok {
				fmt.Fprintf(w, "|  | %s (min) | %.0f |  |  |\n", k, s.lo)
			}
		}
	}
	r.printInproc(w, keys)
	if r.Lost != nil {
		fmt.Fprintln(w)
		fmt.Fprintln(w, "| lost row | runs | minions expected | returns delivered | named (not returned) | neither returned nor named | runs complete | seconds |")
		fmt.Fprintln(w, "| --- | --- | --- | --- | --- | --- | --- | --- |")
		for _, k := range []string{"ours", "cmd_iter"} {
			t := r.Lost[k]
			named := fmt.Sprint(t.Named)
			if len(t.States) > 0 {
				named += fmt.Sprintf(" %v", t.States)
			}
			fmt.Fprintf(w, "| %s | %d | %d | %d | %s | %d | %d | %.0f |\n", k, t.Runs, t.Expected, t.Returned, named,
				t.Unaccounted, t.CompleteRun, t.Seconds)
		}
	}
	for _, n := range r.Notes {
		fmt.Fprintln(w, "\n"+n)
	}
}

// printInproc prints the in-process rows (inproc.go): medians (min-max) over the rounds.
func (r *report) printInproc(w io.Writer, keys []string) {
	for _, row := range keys {
		rs := r.Rounds[row]
		if !strings.HasPrefix(row, "inprocess") {
			continue
		}
		fmt.Fprintln(w)
		fmt.Fprintln(w, "| in-process row | measure | median (min-max) |")
		fmt.Fprintln(w, "| --- | --- | --- |")
		for _, m := range [][2]string{
			{"ours_returns_per_s", "returns/s, Run call -> last Result (goal >= 100k)"},
			{"decode_returns_per_s", "baseline: returns/s, the same bytes through salt.SubscribeEvents alone"},
			{"cpu_us_per_return", "CPU us per return (process user+sys: simulator and client)"},
			{"peak_heap_mib", "peak heap MiB, simulator included (goal <= 64)"},
			{"run_heap_mib", "peak heap minus the idle heap before the round, MiB"},
			{"idle_heap_mib", "idle heap before the round (mostly the simulator's fleet), MiB"},
		} {
			if s, ok := statsOf(rs, m[0]); ok {
				fmt.Fprintf(w, "| %s (%d rounds) | %s | %s |\n", row, len(rs), m[1], s.stringPrec())
			}
		}
		if a, ok1 := statsOf(rs, "ours_returns_per_s"); ok1 {
			if b, ok2 := statsOf(rs, "decode_returns_per_s"); ok2 {
				fmt.Fprintf(w, "| %s | ours / baseline (medians) | %.2fx |\n", row, a.med/b.med)
			}
		}
	}
}

// stringPrec is String with three significant digits at least (rates of 100,000s and heaps of
// tens of MiB in one table).
func (s stats) stringPrec() string {
	f := func(x float64) string {
		if x >= 1000 {
			return fmt.Sprintf("%.0f", x)
		}
		return fmt.Sprintf("%.3g", x)
	}
	return fmt.Sprintf("%s (%s-%s)", f(s.med), f(s.lo), f(s.hi))
}
