// Command etcdbench runs ONE round of one etcd benchmark row of scripts/bench.sh (row group etcd) and
// prints one JSON object on stdout, in the shape benchrun prints. It lives in the bench module (not the main
// module) because the etcd server it measures against is embedded (go.etcd.io/etcd/server/v3/embed); the server
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
	"github.com/oduflow/oduflow-go/bench/internal/benchkit"
	"github.com/oduflow/oduflow-go/bench/internal/benchsim"
)

func main() {
	benchkit.Main("etcdbench", "etcdbench <latency|inflight|serve|sim> [flags]", map[string]benchkit.Command{
		"latency":           cmdLatency,
		"inflight":          cmdInflight,
		"serve":             cmdServe,
		benchsim.SubCommand: benchsim.Serve,
	})
}
