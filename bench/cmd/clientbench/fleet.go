package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/oduflow/oduflow-go/salt"
	"github.com/oduflow/oduflow-go/salt/saltcmd"
)

var stderr = os.Stderr

// fleet restarts the lab's fleet minions (and only them): their PIDs are in
// $SALTLAB_DIR/fleet/pids ("<id> <pid>" a line, each the leader of its own session), their
// config in $SALTLAB_DIR/fleet/NN/etc.
type fleet struct {
	lab string
	mu  sync.Mutex
	pid map[string]int
}

func openFleet(cfg config) (*fleet, error) {
	b, err := os.ReadFile(filepath.Join(cfg.lab, "fleet", "pids"))
	if err != nil {
		return nil, err
	}
	f := &fleet{lab: cfg.lab, pid: map[string]int{}}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		id, p, ok := strings.Cut(line, " ")
		n, err := strconv.Atoi(strings.TrimSpace(p))
		if !ok || err != nil || n <= 1 {
			return nil, fmt.Errorf("fleet pids: bad line %q", line)
		}
		f.pid[id] = n
	}
	return f, nil
}

// index is the fleet number NN of a minion id (its last hex digits).
func index(id string) (int, error) {
	i := strings.LastIndexByte(id, '-')
	n, err := strconv.ParseInt(id[i+1:], 16, 64)
	return int(n), err
}

// restart stops the minion's process group (TERM, KILL after 10 s) and starts it again the way
// saltlab.sh fleet does, recording the new PID in the fleet's PID file.
func (f *fleet) restart(id string) error {
	f.mu.Lock()
	pid := f.pid[id]
	f.mu.Unlock()
	if pid <= 1 {
		return fmt.Errorf("no pid for %s", id)
	}
	_ = syscall.Kill(-pid, syscall.SIGTERM)
	for i := 0; i < 40 && syscall.Kill(pid, 0) == nil; i++ {
		time.Sleep(250 * time.Millisecond)
	}
	if syscall.Kill(pid, 0) == nil {
		_ = syscall.Kill(-pid, syscall.SIGKILL)
	}
	n, err := index(id)
	if err != nil {
		return err
	}
	nn := fmt.Sprintf("%02d", n)
	logf, err := os.OpenFile(filepath.Join(f.lab, "logs", "fleet-"+nn+".out"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	defer func() { _ = logf.Close() }()
	cmd := exec.Command("/usr/bin/python3", filepath.Join(f.lab, "src", "scripts", "salt-minion"),
		"-c", filepath.Join(f.lab, "fleet", nn, "etc"))
	cmd.Dir = "/"
	cmd.Env = append(os.Environ(), "PYTHONPATH="+f.lab+"/src:"+f.lab+"/pylib")
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case err := <-exited: // a minion that cannot start exits at once (a missing module, a bad config)
		return fmt.Errorf("the restarted minion exited at once (%v); see logs/fleet-%s.out", err, nn)
	case <-time.After(2 * time.Second):
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.pid[id] = cmd.Process.Pid
	return f.writePids()
}

// writePids rewrites the PID file (atomically) so that saltlab.sh fleet stop finds the new
// processes. The caller holds mu.
func (f *fleet) writePids() error {
	path := filepath.Join(f.lab, "fleet", "pids")
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var out strings.Builder
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		id, _, _ := strings.Cut(line, " ")
		fmt.Fprintf(&out, "%s %d\n", id, f.pid[id])
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(out.String()), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// waitAllUp waits (at most 3 minutes) until every fleet minion answers test.ping again.
func (f *fleet) waitAllUp(o *ours, ids []string) error {
	deadline := time.Now().Add(3 * time.Minute)
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		_, _, rs, err := o.runOnce(ctx, saltcmd.Cmd{Target: salt.ListTarget(ids...), Fun: "test.ping",
			Timeout: 3 * time.Second, GatherJobTimeout: 3 * time.Second})
		cancel()
		if err == nil && allReturned(rs, len(ids)) {
			return nil
		}
		time.Sleep(2 * time.Second)
	}
	return fmt.Errorf("the fleet did not come back within 3 minutes")
}
