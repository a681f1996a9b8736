// Command benchrun runs ONE round of one benchmark row of scripts/bench.sh and prints one JSON
// object on stdout. bench.sh interleaves its rounds with the anchors' rounds (Salt's Python
// client, the fsync floor), so that every ratio compares two medians measured in the same run.
//
// Sub-commands (all take flags; see each one's flag set):
//
//	publish_rtt   sequential publishes of test.ping to the lab master, send -> publish reply
//	publish_breakdown  the phases of those publishes (fresh and reused connections), traced
//	throughput    K goroutines on ONE Client, one reused JID each, publishes per second
//	e2e_ping      test.ping through the library (publish + event-bus return) and its overhead
//	start_idle    Start of new requests on an idle dispatcher, and 100 concurrent Starts
//	inflight      10,000 requests in flight on one dispatcher against a simulator child process
//	sim           the simulator child of inflight (internal use)
//	custom        validate + compile + digest of a 64 KiB custom state source: wall and CPU time
//	decode        decode of a captured return event frame from memory: wall and CPU time
//	configure     dispatched configure requests on the lab minion, Start -> terminal, broken down
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/signal"
	"slices"
	"syscall"
	"time"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: benchrun <publish_rtt|publish_breakdown|throughput|e2e_ping|start_idle|inflight|sim|custom|decode|configure> [flags]")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cmds := map[string]func(context.Context, []string) (any, error){
		"publish_rtt":       cmdPublishRTT,
		"publish_breakdown": cmdPublishBreakdown,
		"throughput":        cmdThroughput,
		"e2e_ping":          cmdE2EPing,
		"start_idle":        cmdStartIdle,
		"inflight":          cmdInflight,
		"sim":               cmdSim,
		"custom":            cmdCustom,
		"decode":            cmdDecode,
		"configure":         cmdConfigure,
	}
	f, ok := cmds[os.Args[1]]
	if !ok {
		fmt.Fprintln(os.Stderr, "benchrun: unknown sub-command", os.Args[1])
		os.Exit(2)
	}
	res, err := f(ctx, os.Args[2:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchrun:", os.Args[1]+":", err)
		os.Exit(1)
	}
	if res == nil {
		return
	}
	out, err := json.Marshal(res)
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchrun:", err)
		os.Exit(1)
	}
	fmt.Println(string(out))
}

// summary is the distribution of one round's samples (milliseconds unless the key says otherwise).
type summary struct {
	N      int     `json:"n"`
	Median float64 `json:"median"`
	P90    float64 `json:"p90"`
	P99    float64 `json:"p99"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
}

// summarize: nearest-rank percentiles of d, in units of unit.
func summarize(d []time.Duration, unit time.Duration) summary {
	if len(d) == 0 {
		return summary{}
	}
	s := slices.Clone(d)
	slices.Sort(s)
	n := len(s)
	f := func(x time.Duration) float64 { return round3(float64(x) / float64(unit)) }
	rank := func(p float64) time.Duration {
		i := int(math.Ceil(p*float64(n))) - 1
		return s[max(0, min(n-1, i))]
	}
	med := s[n/2]
	if n%2 == 0 {
		med = (s[n/2-1] + s[n/2]) / 2
	}
	return summary{N: n, Median: f(med), P90: f(rank(0.9)), P99: f(rank(0.99)), Min: f(s[0]), Max: f(s[n-1])}
}

func round3(x float64) float64 { return math.Round(x*1000) / 1000 }

// cpuTime is this process's user + system CPU time, all threads (the garbage collector's included).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
