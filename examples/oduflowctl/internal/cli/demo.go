package cli

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/oduflow/oduflow-go/oduflow"
	"github.com/oduflow/oduflow-go/oduflow/catalog"
	"github.com/oduflow/oduflow-go/receipt"
	"github.com/oduflow/oduflow-go/salt"
	"github.com/oduflow/oduflow-go/salt/salttest"
)

func cmdDemo(e *env, args []string) error {
	fs := newFlagSet("demo", "demo\n\n"+
		"Runs the whole flow against the built-in Salt master simulator in a temporary directory, with no\n"+
		"flags and no setup: ping, configure (succeeded), production (failed with counts), a repeated start\n"+
		"(same JID, no new publication), a lost return recovered by status polling, and a custom state from\n"+
		"YAML to digest to succeeded. Minions run the real oduflow_job.py when python3 is available.", e.g, e.stderr)
	if _, err := parseArgs(fs, args, 0, 0, "no arguments"); err != nil {
		return err
	}
	return RunDemo(e.ctx, e.stdout)
}

// DemoTimers are the dispatcher's timers in the demo: the status poll interval is 1 s
// (10 s window / 10 polls), so a lost return is recovered in about a second.
func DemoTimers() oduflow.Timers {
	return oduflow.Timers{ExecutionWait: 10 * time.Second, HardDeadline: 12 * time.Second,
		StatusExpiry: 13 * time.Second, LaunchGrace: oduflow.DefaultTimers().LaunchGrace, LeaseWait: 2 * time.Second,
		PollBudget: 10, CallTimeout: 3 * time.Second}
}

// demo is one run of the demo.
type demo struct {
	w      io.Writer
	t0     time.Time
	sim    *salttest.Master
	d      *oduflow.Dispatcher
	cat    catalog.Store
	minion string
	// gate holds the worker at its preflight (its oduflow_job.capabilities publication, reported
	// through Hooks.Published, comes before it publishes the run), while armed, so that the demo
	// can tell the simulator which JID's return to lose.
	requests     int
	configureID  string
	configureJID string
	mu           sync.Mutex
	armed        bool
	gate         chan struct{}
}

func (dm *demo) say(format string, args ...any) {
	fmt.Fprintf(dm.w, "[%5.2fs] "+format+"\n", append([]any{time.Since(dm.t0).Seconds()}, args...)...)
}

func (dm *demo) step(n int, title string) {
	fmt.Fprintf(dm.w, "\n%d. %s\n", n, title)
}

// published is the demo's Hooks.Published: the only public signal it needs to narrate step 5.
func (dm *demo) published(_ context.Context, _ oduflow.RequestRef, fun, _ string) {
	if fun != "oduflow_job.capabilities" {
		return
	}
	dm.mu.Lock()
	g := dm.gate
	if !dm.armed {
		g = nil
	}
	dm.armed = false
	dm.mu.Unlock()
	if g != nil {
		<-g
	}
}

// RunDemo runs the demo, writing the story to w. It cleans up after itself.
func RunDemo(ctx context.Context, w io.Writer) (err error) {
	dm := &demo{w: w, t0: time.Now(), minion: "client-" + receipt.NewRequestID()}
	dir, err := os.MkdirTemp("", "oduflowctl-demo-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))

	fmt.Fprintf(w, "oduflowctl demo: the whole flow against the built-in Salt master simulator\n")
	if err := os.Mkdir(filepath.Join(dir, "sim"), 0o700); err != nil {
		return err
	}
	sim, err := salttest.Start(ctx, salttest.WithDir(filepath.Join(dir, "sim")), salttest.WithLogger(quiet))
	if err != nil {
		return fmt.Errorf("demo: start the simulator: %w", err)
	}
	defer sim.Close()
	dm.sim = sim
	handler, what, stop, pub, err := demoMinion(ctx, dir, dm.minion)
	if err != nil {
		return err
	}
	defer stop()
	if err := sim.AcceptMinionKey(dm.minion, pub); err != nil {
		return err
	}
	sim.AddMinion(dm.minion, handler)
	dm.say("simulator up in %s: requests %s, event bus %s", dir, sim.Addr(), sim.EventsAddr())
	dm.say("minion %s runs %s", dm.minion, what)

	client, err := salt.NewClient(sim.Addr(), salt.WithAuth(salt.UserKey("root", sim.KeyFile())),
		salt.WithRequestTimeout(3*time.Second), salt.WithLogger(quiet))
	if err != nil {
		return err
	}
	defer client.Close()
	cat, err := catalog.Open(filepath.Join(dir, "catalog"), catalog.WithCreate())
	if err != nil {
		return err
	}
	dm.cat = cat
	d, err := oduflow.New(client,
		oduflow.SaltEvents(sim.EventsAddr(), salt.WithReconnectBackoff(20*time.Millisecond, 200*time.Millisecond),
			salt.WithLogger(quiet)),
		oduflow.WithClaimDir(filepath.Join(dir, "claims")), oduflow.WithTimers(DemoTimers()), oduflow.WithPKIDir(sim.PKIDir()),
		oduflow.WithLogger(quiet), oduflow.WithHooks(oduflow.Hooks{Published: dm.published}), oduflow.WithCustomCatalog(cat))
	if err != nil {
		return err
	}
	defer func() {
		now, cancel := context.WithCancel(context.Background())
		cancel() // the demo waited for its requests itself
		_ = d.Close(now)
	}()
	dm.d = d
	dm.say("dispatcher ready: claims in %s, status poll every %s (shortened for the demo)",
		filepath.Join(dir, "claims"), DemoTimers().PollInterval())

	for _, s := range []func(context.Context) error{dm.ping, dm.configure, dm.production, dm.repeat, dm.lostReturn, dm.custom} {
		if err := s(ctx); err != nil {
			return err
		}
	}
	fmt.Fprintf(w, "\ndone in %.1fs: every request was published at most once (%d oduflow_job.run publications for %d requests).\n",
		time.Since(dm.t0).Seconds(), sim.PublicationCount("oduflow_job.run", ""), dm.requests)
	return nil
}
