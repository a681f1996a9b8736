package benchsim

import (
	"context"
	"flag"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/oduflow/oduflow-go/bench/internal/benchkit"
	"github.com/oduflow/oduflow-go/oduflow/oduflowtest/fakeminion"
	"github.com/oduflow/oduflow-go/salt/salttest"
)

// SubCommand is the sub-command under which a program registers Serve.
const SubCommand = "sim"

// MinionID is the i-th held minion (both processes derive it).
func MinionID(i int) string { return fmt.Sprintf("client-00000000-0000-4000-8000-%012d", i) }

// RateMinionID answers test.ping at once: the target of the simulator's own publish-rate anchor.
const RateMinionID = "client-00000000-0000-4000-9000-000000000000"

// Hello is the child's first line: where its master listens.
type Hello struct {
	Request string `json:"request"`
	Events  string `json:"events"`
	KeyFile string `json:"key_file"`
	PKIDir  string `json:"pki_dir"`
}

// Stats answers a "stats" line: how many oduflow_job.run publications reached a held minion, and when
// the first and last did (Unix ns, the same clock as the parent's).
type Stats struct {
	Runs  int64 `json:"runs"`
	All   int64 `json:"all"` // every publication that reached a held minion (capability checks too)
	First int64 `json:"first_ns"`
	Last  int64 `json:"last_ns"`
	CPUNs int64 `json:"cpu_ns"` // the child's own CPU time (user + system) so far
}

// Child is the running simulator child.
type Child struct {
	*benchkit.Child
	Hello Hello
}

// Start re-executes this program as the simulator child with n held minions; a non-empty cpuProfile
// is where the child writes a CPU profile of its whole life.
func Start(ctx context.Context, n int, cpuProfile string) (*Child, error) {
	c := &Child{}
	bc, err := benchkit.StartChild(ctx, &c.Hello, SubCommand, "-minions", fmt.Sprint(n), "-cpu-profile", cpuProfile)
	if err != nil {
		return nil, err
	}
	c.Child = bc
	return c, nil
}

// Stats asks the child for its counts.
func (c *Child) Stats() (Stats, error) {
	var st Stats
	err := c.Ask("stats", &st)
	return st, err
}

// Serve is the child: it prints a Hello line, then answers each "stats" line with a Stats line; "quit"
// or the end of its stdin ends it.
func Serve(ctx context.Context, args []string) (any, error) {
	fs := flag.NewFlagSet(SubCommand, flag.ContinueOnError)
	n := fs.Int("minions", 10000, "held minions")
	cpuProfile := fs.String("cpu-profile", "", "write a CPU profile of this child's life here")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	stopProfile, err := benchkit.StartCPUProfile(*cpuProfile)
	if err != nil {
		return nil, err
	}
	defer stopProfile()
	sim, stop, err := StartInProcess(ctx)
	if err != nil {
		return nil, err
	}
	var runs, all, first, last atomic.Int64
	// The held minions answer like fakeminion models (one model answers their capability checks) but
	// share that model's key and hold every oduflow_job.run until the child quits: 10,000 RSA-2048 keys
	// took longer to generate on a loaded 2-core machine than the whole measured round.
	proto := fakeminion.NewModel(MinionID(0))
	release := make(chan struct{})
	held := func(ctx context.Context, job salttest.Job) (any, int) {
		all.Add(1)
		if job.Fun != "oduflow_job.run" {
			return proto.Handle(ctx, job)
		}
		now := time.Now().UnixNano()
		runs.Add(1)
		first.CompareAndSwap(0, now)
		for {
			l := last.Load()
			if now <= l || last.CompareAndSwap(l, now) {
				break
			}
		}
		select {
		case <-release:
		case <-ctx.Done():
		}
		return "released", 1
	}
	for i := range *n {
		if err := sim.AcceptMinionKey(MinionID(i), proto.PublicKeyPEM()); err != nil {
			return nil, err
		}
		sim.AddMinion(MinionID(i), held)
	}
	sim.AddMinion(RateMinionID, nil) // nil: the generic minion, test.ping answered at once
	if err := benchkit.PrintHello(Hello{Request: sim.Addr(), Events: sim.EventsAddr(), KeyFile: sim.KeyFile(),
		PKIDir: sim.PKIDir()}); err != nil {
		return nil, err
	}
	err = benchkit.AnswerLines(ctx, func(string) any {
		return Stats{Runs: runs.Load(), All: all.Load(), First: first.Load(), Last: last.Load(), CPUNs: int64(benchkit.CPUTime())}
	})
	close(release)
	stop()
	return nil, err
}
