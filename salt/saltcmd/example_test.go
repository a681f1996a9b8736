package saltcmd_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/oduflow/oduflow-go/salt"
	"github.com/oduflow/oduflow-go/salt/saltcmd"
	"github.com/oduflow/oduflow-go/salt/salttest"
)

// exampleMaster starts a simulated master with a fleet: web-0000 and web-0001 healthy,
// web-0002 failing, web-0003 frozen (answers nothing), and a client for it.
func exampleMaster(ctx context.Context) (*salttest.Master, *saltcmd.Client, func(), error) {
	dir, err := os.MkdirTemp("", "sc") // short: the event socket path is limited to 107 bytes
	if err != nil {
		return nil, nil, nil, err
	}
	m, err := salttest.Start(ctx, salttest.WithDir(dir))
	if err != nil {
		return nil, nil, nil, err
	}
	m.AddFleet("web", 4, func(i int) salttest.MinionBehavior {
		return salttest.MinionBehavior{Fail: i == 2, Frozen: i == 3}
	})
	pub, err := salt.NewClient(m.Addr(), salt.WithAuth(salt.UserKey("root", m.KeyFile())))
	if err != nil {
		return nil, nil, nil, err
	}
	c, err := saltcmd.New(pub, m.EventsAddr(),
		saltcmd.WithTimeouts(200*time.Millisecond, 300*time.Millisecond)) // Salt: 5 s and 10 s
	cleanup := func() { _ = pub.Close(); _ = m.Close(); _ = os.RemoveAll(dir) }
	return m, c, cleanup, err
}

// Run is salt 'web*' test.ping: every minion the master expected ends in exactly one state,
// and a minion that answers nothing is named, never counted as a success.
func ExampleClient_Run() {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, client, cleanup, err := exampleMaster(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer cleanup()

	job, err := client.Run(ctx, saltcmd.Cmd{Target: salt.GlobTarget("web*"), Fun: "test.ping"})
	if err != nil {
		fmt.Println("publish:", err)
		return
	}
	var lines []string
	for r := range job.Results() { // streamed as they arrive
		lines = append(lines, fmt.Sprintf("%s %s ok=%v retcode=%d", r.Minion, r.State, r.OK(), r.Retcode))
	}
	slices.Sort(lines)
	for _, l := range lines {
		fmt.Println(l)
	}
	sum := job.Wait()
	fmt.Println("returned:", sum.Returned, "failed:", sum.Failed, "all ok:", sum.AllOK())
	// Output:
	// web-0000 returned ok=true retcode=0
	// web-0001 returned ok=true retcode=0
	// web-0002 returned ok=false retcode=1
	// web-0003 no_response ok=false retcode=-1
	// returned: 3 failed: 1 all ok: false
}

// Async publishes and returns the JID and the expected minions at once; Watch follows the job
// later from the event bus.
func ExampleClient_Async() {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, client, cleanup, err := exampleMaster(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer cleanup()

	p, err := client.Async(ctx, saltcmd.Cmd{Target: salt.ListTarget("web-0000", "web-0003"), Fun: "test.sleep",
		Args: []any{1}})
	if err != nil {
		fmt.Println("publish:", err)
		return
	}
	fmt.Println("expected:", p.Minions)
	job, err := client.Watch(ctx, p.JID, p.Minions)
	if err != nil {
		fmt.Println(err)
		return
	}
	for r := range job.Results() {
		fmt.Println(r.Minion, r.State)
	}
	// Output:
	// expected: [web-0000 web-0003]
	// web-0000 returned
	// web-0003 no_response
}

// Batch is salt -b 2 --failhard: two minions at a time, each freed slot given to the next
// minion; after the first failure no new minion is started and those left are NotRun.
func ExampleClient_Batch() {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	m, client, cleanup, err := exampleMaster(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer cleanup()
	m.AddFleet("db", 5, func(i int) salttest.MinionBehavior {
		return salttest.MinionBehavior{Fail: i == 1, Delay: time.Duration(i) * 100 * time.Millisecond}
	})

	size, _ := saltcmd.ParseBatchSize("2")
	job, err := client.Batch(ctx, saltcmd.Cmd{Target: salt.GlobTarget("db-*"), Fun: "test.ping"}, size,
		saltcmd.BatchMaxFailures(1))
	if err != nil {
		fmt.Println(err)
		return
	}
	var lines []string
	for r := range job.Results() {
		lines = append(lines, fmt.Sprintf("%s %s ok=%v", r.Minion, r.State, r.OK()))
	}
	slices.Sort(lines)
	for _, l := range lines {
		fmt.Println(l)
	}
	// Output:
	// db-0000 returned ok=true
	// db-0001 returned ok=false
	// db-0002 returned ok=true
	// db-0003 not_run ok=false
	// db-0004 not_run ok=false
}
