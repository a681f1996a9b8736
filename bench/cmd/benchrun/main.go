// Command benchrun runs ONE round of one benchmark row of scripts/bench.sh and prints one JSON
// object on stdout. bench.sh interleaves its rounds with the anchors' rounds (Salt's Python
// client, the fsync floor), so that every ratio compares two medians measured in the same run.
//
// Sub-commands (all take flags; see each one's flag set):
//
//	publish_rtt   sequential publishes of test.ping to the lab master, send -> publish reply
//	publish_breakdown  the phases of those publishes (fresh and reused connections), traced
//	throughput    K goroutines on ONE Client, one reused JID each, publishes per second
//	e2e_ping      test.ping through the library (publish + event-bus return) and its overhead, broken
//	              down at the master's stamps (-raw: a bare second bus connection too; -reuse)
//	start_idle    Start of new requests on an idle dispatcher, and 100 concurrent Starts
//	inflight      10,000 requests in flight on one dispatcher against a simulator child process
//	sim           the simulator child of inflight (internal use)
//	custom        validate + compile + digest of a 64 KiB custom state source: wall and CPU time
//	decode        decode of a captured return event frame from memory: wall and CPU time
//	configure     dispatched configure requests on the lab minion, Start -> terminal, broken down (with the
//	              minion's own profile table when it has one, e.g. a host-named lab: -profile, default its first)
//	rollout       configure on every fleet minion at once (ODUFLOW_SALT_FLEET), first Start -> last terminal
//	rollout_salt  its anchor: salt -L <the fleet> state.apply roles.client_stack through Salt's CLI
package main

import (
	"github.com/oduflow/oduflow-go/bench/internal/benchkit"
	"github.com/oduflow/oduflow-go/bench/internal/benchsim"
)

func main() {
	benchkit.Main("benchrun", "benchrun <publish_rtt|publish_breakdown|throughput|e2e_ping|start_idle|inflight|sim|custom|decode|configure|rollout|rollout_salt> [flags]",
		map[string]benchkit.Command{
			"publish_rtt":       cmdPublishRTT,
			"publish_breakdown": cmdPublishBreakdown,
			"throughput":        cmdThroughput,
			"e2e_ping":          cmdE2EPing,
			"start_idle":        cmdStartIdle,
			"inflight":          cmdInflight,
			benchsim.SubCommand: benchsim.Serve,
			"custom":            cmdCustom,
			"decode":            cmdDecode,
			"configure":         cmdConfigure,
			"rollout":           cmdRollout,
			"rollout_salt":      cmdRolloutSalt,
		})
}
