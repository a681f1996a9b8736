// Command clientbench (bench.sh row group client) measures the general Salt client (package saltcmd) against Salt's own
// Python LocalClient on a live lab master with a fleet of minions, in interleaved rounds of one
// run (ours, theirs, ours, theirs, ...), and prints medians with their spread (min-max).
//
// Rows:
//   - ping: test.ping on 10 and on 20 fleet minions, publish to last return: ours (Run) vs
//     LocalClient.cmd, and vs LocalClient.cmd_iter (time to its first and to its last return);
//   - lost: -lost-runs runs of test.ping on the whole fleet by each client, interleaved, while a
//     random fleet minion is restarted every -restart-every: returns delivered, minions named
//     (with why) and minions neither returned nor named;
//   - batch: cmd.run 'sleep 1' on 20 minions, -b 5, wall time: ours (Batch) vs
//     LocalClient.cmd_batch (what salt -b runs, without the CLI's process start);
//   - inproc: 10,000 simulated minions (package salttest, in this process, over its real
//     sockets) answer one test.ping run: returns/s, CPU per return, peak heap, against the
//     event stream's decode rate of the same bytes in the same round (inproc.go). It needs no
//     lab: -rows inproc runs anywhere.
//
// The lab rows need root (the master's root key, the fleet's PID file), the lab's variables
// (ODUFLOW_SALT_MASTER, ODUFLOW_SALT_EVENTS, ODUFLOW_SALT_KEY_FILE, ODUFLOW_SALT_FLEET,
// ODUFLOW_SALTLAB_DIR) and /usr/bin/python3 with Salt importable from $SALTLAB_DIR/src.
// Restarts touch only the fleet minions, never the masters or the lab's main minion.
package main

import (
	"bufio"
	_ "embed"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

//go:embed anchor.py
var anchorPy string

func main() {
	rows := flag.String("rows", "ping,lost,batch", "rows to measure: ping, lost, batch (the lab's), inproc (no lab)")
	inprocMinions := flag.Int("inproc-minions", 10000, "inproc row: simulated minions")
	rounds := flag.Int("rounds", 7, "interleaved rounds per ping and batch row (at least 5 for a published number)")
	lostRuns := flag.Int("lost-runs", 200, "runs per client in the lost row")
	restartEvery := flag.Duration("restart-every", 8*time.Second, "lost row: restart one random fleet minion this often")
	lostTimeout := flag.Duration("lost-timeout", 5*time.Second, "lost row: timeout and gather_job_timeout of every run, both clients (whole seconds)")
	lostBudget := flag.Duration("lost-budget", 0, "lost row: stop after this long even before -lost-runs (0: no limit); the report says how many ran")
	lostTogether := flag.Bool("lost-together", false, "lost row: run both clients' test.ping at the same time (default: one after the other)")
	out := flag.String("o", "", "also write every round and the summary as JSON to this file")
	flag.Parse()
	lost := lostConfig{runs: *lostRuns, restartEvery: *restartEvery, timeout: *lostTimeout, budget: *lostBudget,
		together: *lostTogether}
	if err := run(*rows, *rounds, *inprocMinions, lost, *out); err != nil {
		fmt.Fprintln(os.Stderr, "clientbench:", err)
		os.Exit(1)
	}
}

type config struct {
	master, events, keyFile, lab string
	fleet                        []string
}

func configFromEnv() (config, error) {
	c := config{master: os.Getenv("ODUFLOW_SALT_MASTER"), events: os.Getenv("ODUFLOW_SALT_EVENTS"),
		keyFile: os.Getenv("ODUFLOW_SALT_KEY_FILE"), lab: os.Getenv("ODUFLOW_SALTLAB_DIR")}
	if f := os.Getenv("ODUFLOW_SALT_FLEET"); f != "" {
		c.fleet = strings.Split(f, ",")
	}
	slices.Sort(c.fleet)
	if c.master == "" || c.events == "" || c.keyFile == "" || c.lab == "" {
		return c, fmt.Errorf("set the lab's variables: eval \"$(bash saltlab.sh env)\"")
	}
	if len(c.fleet) < 20 {
		return c, fmt.Errorf("ODUFLOW_SALT_FLEET has %d minions: run saltlab.sh fleet 20 first", len(c.fleet))
	}
	return c, nil
}

// lostConfig parameterizes the lost row.
type lostConfig struct {
	runs                          int
	restartEvery, timeout, budget time.Duration
	together                      bool
}

func run(rows string, rounds, inprocMinions int, lost lostConfig, outFile string) error {
	report := &report{Rounds: map[string][]map[string]float64{}}
	want := func(r string) bool { return slices.Contains(strings.Split(rows, ","), r) }
	// Each row's table goes to stderr (and the JSON file is rewritten) as soon as it is done, so
	// that a long lost row does not hold the others back.
	done := func() error {
		report.print(os.Stderr)
		if outFile == "" {
			return nil
		}
		b, _ := json.MarshalIndent(report, "", " ")
		return os.WriteFile(outFile, b, 0o644)
	}
	if want("inproc") {
		if err := inprocRow(report, inprocMinions, rounds); err != nil {
			return err
		}
		if err := done(); err != nil {
			return err
		}
	}
	if !want("ping") && !want("batch") && !want("lost") {
		report.print(os.Stdout)
		return nil
	}
	cfg, err := configFromEnv()
	if err != nil {
		return err
	}
	ours, err := newOurs(cfg)
	if err != nil {
		return err
	}
	py, err := startAnchor(cfg)
	if err != nil {
		return err
	}
	defer py.close()
	if want("ping") {
		for _, n := range []int{10, 20} {
			if err := pingRow(report, ours, py, cfg.fleet[:n], rounds); err != nil {
				return err
			}
		}
		if err := done(); err != nil {
			return err
		}
	}
	if want("batch") {
		if err := batchRow(report, ours, py, cfg.fleet[:20], rounds); err != nil {
			return err
		}
		if err := done(); err != nil {
			return err
		}
	}
	if want("lost") {
		if err := lostRow(report, ours, py, cfg, lost); err != nil {
			return err
		}
		if err := done(); err != nil {
			return err
		}
	}
	report.print(os.Stdout)
	return nil
}

// anchor is the Python LocalClient process.
type anchor struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Scanner
	dir string
}

type anchorAnswer struct {
	FirstS   float64  `json:"first_s"`
	LastS    float64  `json:"last_s"`
	Returned []string `json:"returned"`
	Error    string   `json:"error"`
}

func startAnchor(cfg config) (*anchor, error) {
	dir, err := os.MkdirTemp("", "clientbench-")
	if err != nil {
		return nil, err
	}
	script := filepath.Join(dir, "anchor.py")
	if err := os.WriteFile(script, []byte(anchorPy), 0o600); err != nil {
		return nil, err
	}
	cmd := exec.Command("/usr/bin/python3", "-W", "ignore", script)
	cmd.Env = append(os.Environ(), "PYTHONPATH="+cfg.lab+"/src:"+cfg.lab+"/pylib", "SALTLAB_DIR="+cfg.lab)
	cmd.Stderr = io.Discard
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	outp, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	a := &anchor{cmd: cmd, in: in, out: bufio.NewScanner(outp), dir: dir}
	a.out.Buffer(make([]byte, 1<<20), 16<<20)
	if !a.out.Scan() {
		a.close()
		return nil, fmt.Errorf("the Python anchor did not start")
	}
	return a, nil
}

func (a *anchor) call(req map[string]any) (anchorAnswer, error) {
	b, _ := json.Marshal(req)
	if _, err := a.in.Write(append(b, '\n')); err != nil {
		return anchorAnswer{}, err
	}
	if !a.out.Scan() {
		return anchorAnswer{}, fmt.Errorf("the Python anchor stopped")
	}
	var ans anchorAnswer
	if err := json.Unmarshal(a.out.Bytes(), &ans); err != nil {
		return ans, err
	}
	if ans.Error != "" {
		return ans, fmt.Errorf("python: %s", ans.Error)
	}
	return ans, nil
}

func (a *anchor) close() {
	_ = a.in.Close()
	done := make(chan struct{})
	go func() { _ = a.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		_ = a.cmd.Process.Kill()
	}
	_ = os.RemoveAll(a.dir)
}
