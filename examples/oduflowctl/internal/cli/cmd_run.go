package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/oduflow/oduflow-go/salt"
	"github.com/oduflow/oduflow-go/salt/saltcmd"
)

// Exit statuses of run (documented in its usage): 0 every minion returned with success, 1 some
// returned a failure, 5 some did not return (that outcome is not proven).
const runUsage = `run TARGET FUN [ARG...] [KEY=VALUE...] [--tgt-type T] [--batch N|N%] [--timeout D] [--async]

Runs an execution-module function on minions, like salt TARGET FUN ARG... (positional ARGs and
KEY=VALUE strings are sent as the salt CLI sends them; the minion turns KEY=VALUE into keyword
arguments), and names every minion that did not return and why. Flags may come anywhere; put
-- before an ARG that starts with "-".

Output: one JSON line per minion as it ends ({"minion","state","retcode","success","return",
"reason","jid","elapsed_ms"}; state is returned, running, no_response, not_connected,
return_lost or not_run), then one {"summary": {...}} line; --output text prints like the salt
CLI (each minion's return under "<minion>:", then "Minion did not return. [<why>]").
--async prints {"jid","minions","missing"} and returns at once.

oduflow_job.* functions are refused (exit status 2): they belong to the dispatcher (start).

Exit status: 0 every minion returned with success; 1 some returned a failure; 5 some did not
return (running, no response, not connected, return lost, not run); 2 bad input; 3 master or
event bus unreachable; 4 refused by the master.`

// secondsOrDuration is a flag that takes "5" (seconds, like salt -t) or a Go duration ("1m").
type secondsOrDuration struct{ d time.Duration }

func (s *secondsOrDuration) String() string { return s.d.String() }

func (s *secondsOrDuration) Set(v string) error {
	if n, err := strconv.Atoi(v); err == nil && n >= 0 {
		s.d = time.Duration(n) * time.Second
		return nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		return fmt.Errorf("%q: want seconds or a duration such as 30s", v)
	}
	s.d = d
	return nil
}

func cmdRun(e *env, args []string) error {
	fs := newFlagSet("run", runUsage, e.g, e.stderr)
	tgtType := fs.String("tgt-type", "glob", "target type: glob, list (comma-separated ids), grain, grain_pcre, pillar, pillar_pcre, pcre, compound, nodegroup, ipcidr")
	batch := fs.String("batch", "", "like salt -b: N minions at a time, or N% of the target")
	batchWait := &secondsOrDuration{}
	fs.Var(batchWait, "batch-wait", "like salt --batch-wait: keep a returned minion's slot closed this long")
	failhard := fs.Int("batch-max-failures", 0, "stop starting new minions after this many failures (1: like --failhard; 0: never)")
	timeout := &secondsOrDuration{d: 5 * time.Second}
	fs.Var(timeout, "timeout", "like salt -t: wait this long for returns before asking the minions left with saltutil.find_job")
	gather := &secondsOrDuration{d: 10 * time.Second}
	fs.Var(gather, "gather-job-timeout", "like salt --gather-job-timeout: wait this long for the answers to saltutil.find_job")
	maxWait := &secondsOrDuration{}
	fs.Var(maxWait, "max-wait", "end the run after this long even while minions still run the job (0: no limit)")
	async := fs.Bool("async", false, "like salt --async: publish, print the JID and the expected minions, return at once")
	returner := fs.String("return", "", "like salt --return: returners the minions also send their return to")
	moreEvents := fs.String("events-b", e.getenv("ODUFLOW_SALT_EVENTS_B"), "the event bus of a second master of a multi-master pair, also read (env ODUFLOW_SALT_EVENTS_B)")
	pos, err := parseArgs(fs, args, 2, 1<<16, "TARGET FUN [ARG...]")
	if err != nil {
		return err
	}
	mode, err := e.g.outputMode(e.stdout)
	if err != nil {
		return err
	}
	target := salt.Target{Type: *tgtType, Expr: pos[0]}
	if *tgtType == "list" {
		target = salt.ListTarget(strings.Split(pos[0], ",")...)
	}
	cmd := saltcmd.Cmd{Target: target, Fun: pos[1], Returner: *returner, Timeout: timeout.d,
		GatherJobTimeout: gather.d}
	for _, a := range pos[2:] {
		cmd.Args = append(cmd.Args, a)
	}
	var size saltcmd.BatchSize
	if *batch != "" {
		if *async {
			return usagef("run: --batch and --async do not mix")
		}
		if size, err = saltcmd.ParseBatchSize(*batch); err != nil {
			return usagef("run: --batch %q: want N or N%%", *batch)
		}
	}
	if *failhard < 0 {
		return usagef("run: --batch-max-failures %d: must not be negative", *failhard)
	}
	if err := saltcmd.ValidateTarget(target); err != nil {
		return usagef("run: %v", err)
	}
	if strings.HasPrefix(cmd.Fun, saltcmd.GuardedPrefix) {
		return usagef("run: %s is refused: oduflow_job functions are published only by the dispatcher (oduflowctl start)", cmd.Fun)
	}
	if err := e.g.needMaster("run", !*async); err != nil {
		return err
	}
	pub, err := e.client(e.ctx) // closed when the command ends
	if err != nil {
		return err
	}
	opts := []saltcmd.Option{saltcmd.WithLogger(e.logger()),
		saltcmd.WithEventOptions(salt.WithLogger(e.logger()))}
	if *moreEvents != "" {
		opts = append(opts, saltcmd.WithEventBus(*moreEvents))
	}
	events := e.g.events
	if *async && events == "" {
		events = "unix:///unused" // Async reads no bus
	}
	client, err := saltcmd.New(pub, events, opts...)
	if err != nil {
		return usagef("run: %v", err)
	}
	ctx := e.ctx
	if maxWait.d > 0 {
		var cancel func()
		ctx, cancel = context.WithTimeout(ctx, maxWait.d)
		defer cancel()
	}
	if *async {
		p, err := client.Async(ctx, cmd)
		if err != nil {
			return runError(err)
		}
		return printJSONOrText(e.stdout, mode, map[string]any{"jid": p.JID, "minions": p.Minions, "missing": p.Missing},
			func(w io.Writer) {
				fmt.Fprintf(w, "Executed command with job ID: %s\n", p.JID)
				fmt.Fprintf(w, "Expected minions: %s\n", strings.Join(p.Minions, ", "))
			})
	}
	var job *saltcmd.Job
	if *batch != "" {
		var bopts []saltcmd.BatchOption
		if batchWait.d > 0 {
			bopts = append(bopts, saltcmd.BatchWait(batchWait.d))
		}
		if *failhard > 0 {
			bopts = append(bopts, saltcmd.BatchMaxFailures(*failhard))
		}
		job, err = client.Batch(ctx, cmd, size, bopts...)
	} else {
		job, err = client.Run(ctx, cmd)
	}
	if err != nil {
		return runError(err)
	}
	enc := json.NewEncoder(e.stdout)
	enc.SetEscapeHTML(false)
	for r := range job.Results() {
		if mode == "json" {
			if err := enc.Encode(resultJSON(r)); err != nil {
				return err
			}
			continue
		}
		printResultText(e.stdout, r)
	}
	sum := job.Wait()
	if mode == "json" {
		if err := enc.Encode(map[string]any{"summary": summaryJSON(sum)}); err != nil {
			return err
		}
	} else {
		printSummaryText(e.stdout, sum)
	}
	switch {
	case len(sum.NotReturned) > 0:
		return silentExit(ExitUnknown)
	case sum.Failed > 0:
		return silentExit(ExitFailed)
	}
	return nil
}

// runError maps a refusal made before sending to exit status 2; other errors keep exitFor's
// mapping (unreachable 3, refused 4, outcome unknown 5).
func runError(err error) error {
	if errors.Is(err, salt.ErrInvalidRequest) {
		return usagef("run: %v", oneLine(err.Error()))
	}
	if errors.Is(err, salt.ErrNoMinions) {
		return failedf("run: no minions matched the target")
	}
	return err
}

func printJSONOrText(w io.Writer, mode string, v any, text func(io.Writer)) error {
	if mode == "json" {
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(w, "%s\n", b)
		return err
	}
	text(w)
	return nil
}

func resultJSON(r saltcmd.Result) map[string]any {
	out := map[string]any{"minion": r.Minion, "state": r.State, "retcode": r.Retcode, "success": r.Success,
		"jid": r.JID, "elapsed_ms": r.Elapsed.Milliseconds()}
	if r.State == saltcmd.Returned {
		out["return"] = jsonValue(r.Return)
	}
	if r.Reason != "" {
		out["reason"] = r.Reason
	}
	return out
}

func summaryJSON(s saltcmd.Summary) map[string]any {
	nr := make([]map[string]any, 0, len(s.NotReturned))
	for _, r := range s.NotReturned {
		nr = append(nr, map[string]any{"minion": r.Minion, "state": r.State, "reason": r.Reason})
	}
	sort.Slice(nr, func(i, j int) bool { return nr[i]["minion"].(string) < nr[j]["minion"].(string) })
	gaps := make([]map[string]any, 0, len(s.Gaps))
	for _, g := range s.Gaps {
		gaps = append(gaps, map[string]any{"bus": g.Bus, "reason": g.Gap.Reason, "dropped": g.Gap.Dropped,
			"at_ms": g.At.Milliseconds()})
	}
	return map[string]any{"jids": s.JIDs, "expected": s.Expected, "returned": s.Returned, "failed": s.Failed,
		"not_returned": nr, "duplicates": s.Duplicates, "ignored": s.Ignored, "gaps": gaps,
		"find_job_rounds": s.FindJobRounds, "problems": s.Problems}
}

// jsonValue makes decoded Salt data printable as JSON (bytes as text when valid UTF-8).
func jsonValue(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = jsonValue(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = jsonValue(e)
		}
		return out
	case []byte:
		return string(x)
	case time.Time:
		return x.Format(time.RFC3339Nano)
	}
	return v
}

// printResultText prints one minion like the salt CLI's nested outputter.
func printResultText(w io.Writer, r saltcmd.Result) {
	fmt.Fprintf(w, "%s:\n", r.Minion)
	if r.State != saltcmd.Returned {
		fmt.Fprintf(w, "    Minion did not return. [%s]\n", textWhy(r))
		return
	}
	nested(w, jsonValue(r.Return), 4)
	if !r.Success {
		fmt.Fprintf(w, "    (retcode %d)\n", r.Retcode)
	}
}

// textWhy is Salt's bracketed reason, with this client's finer states.
func textWhy(r saltcmd.Result) string {
	switch r.State {
	case saltcmd.NoResponse:
		return "No response"
	case saltcmd.NotConnected:
		return "Not connected"
	case saltcmd.Running:
		return "Still running"
	case saltcmd.ReturnLost:
		return "Return lost"
	case saltcmd.NotRun:
		return "Not run"
	}
	return r.State.String()
}

// nested prints v like Salt's nested outputter: maps as "----------" then "key:" blocks,
// lists as "- item", scalars as they are.
func nested(w io.Writer, v any, indent int) {
	pad := strings.Repeat(" ", indent)
	switch x := v.(type) {
	case map[string]any:
		fmt.Fprintf(w, "%s----------\n", pad)
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			fmt.Fprintf(w, "%s%s:\n", pad, k)
			nested(w, x[k], indent+4)
		}
	case []any:
		for _, e := range x {
			if isScalar(e) {
				fmt.Fprintf(w, "%s- %s\n", pad, scalarText(e))
				continue
			}
			nested(w, e, indent+4)
		}
	default:
		for _, line := range strings.Split(scalarText(x), "\n") {
			fmt.Fprintf(w, "%s%s\n", pad, line)
		}
	}
}

func isScalar(v any) bool {
	switch v.(type) {
	case map[string]any, []any:
		return false
	}
	return true
}

func scalarText(v any) string {
	switch x := v.(type) {
	case nil:
		return "None"
	case bool:
		if x {
			return "True"
		}
		return "False"
	case string:
		return x
	}
	return fmt.Sprint(v)
}

func printSummaryText(w io.Writer, s saltcmd.Summary) {
	fmt.Fprintf(w, "\n-------------------------------------------\nSummary\n-------------------------------------------\n")
	fmt.Fprintf(w, "# of minions targeted: %d\n# of minions returned: %d\n# of minions that did not return: %d\n# of minions with errors: %d\n",
		s.Expected, s.Returned, len(s.NotReturned), s.Failed)
	for _, r := range s.NotReturned {
		fmt.Fprintf(w, "  %s: %s (%s)\n", r.Minion, r.State, r.Reason)
	}
	if len(s.Gaps) > 0 {
		fmt.Fprintf(w, "event bus gaps during the run: %d (the minions then out were asked with saltutil.find_job)\n", len(s.Gaps))
	}
	fmt.Fprintln(w, "-------------------------------------------")
}
