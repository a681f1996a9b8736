// Command etcdbench runs ONE round of one etcd benchmark row of scripts/bench.sh (row group etcd) and
// prints one JSON object on stdout, in the shape internal/benchrun prints. It lives in the nested module
// because the etcd server it measures against is embedded (go.etcd.io/etcd/server/v3/embed); the server
// runs in a child process (this binary re-executed: serve), so that the dispatcher's heap and RSS are its
// own and the server's CPU is not charged to the client.
//
// Sub-commands:
//
//	latency   Start of a new request vs one etcd transaction of the same shape as the claim's create,
//	          and Status of a running request vs one etcd read of its claim, samples interleaved
//	inflight  n requests in flight on one dispatcher on etcd (held by a simulator child process): heap
//	          per request, peak RSS, goroutines
//	serve     the etcd member child (internal use)
//	sim       the Salt simulator child of inflight (internal use)
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: etcdbench <latency|inflight|serve|sim> [flags]")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cmds := map[string]func(context.Context, []string) (any, error){
		"latency":  cmdLatency,
		"inflight": cmdInflight,
		"serve":    cmdServe,
		"sim":      cmdSim,
	}
	f, ok := cmds[os.Args[1]]
	if !ok {
		fmt.Fprintln(os.Stderr, "etcdbench: unknown sub-command", os.Args[1])
		os.Exit(2)
	}
	res, err := f(ctx, os.Args[2:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "etcdbench:", os.Args[1]+":", err)
		os.Exit(1)
	}
	if res == nil {
		return
	}
	out, err := json.Marshal(res)
	if err != nil {
		fmt.Fprintln(os.Stderr, "etcdbench:", err)
		os.Exit(1)
	}
	fmt.Println(string(out))
}

func discard() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// summary is the distribution of one round's samples, in the unit its key names (internal/benchrun's).
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

// procStatus reads a kB field of /proc/self/status (VmHWM, VmRSS), in MiB.
func procStatus(field string) float64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		var kb float64
		if _, err := fmt.Sscanf(line, field+": %f kB", &kb); err == nil {
			return round3(kb / 1024)
		}
	}
	return 0
}
