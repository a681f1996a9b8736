package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/server/v3/embed"

	"github.com/oduflow/oduflow-go/internal/receiptproof"
	"github.com/oduflow/oduflow-go/oduflow/oduflowtest/fakeminion"
	"github.com/oduflow/oduflow-go/salt/salttest"
)

// serveHello is the first line the serve child prints.
type serveHello struct {
	Client string `json:"client"`
}

func freeURL() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return "http://" + l.Addr().String(), nil
}

// cmdServe is the etcd member child: one member (fsync on, as in production) with its data directory
// inside -dir; it prints a serveHello line and serves until its stdin closes.
func cmdServe(ctx context.Context, args []string) (any, error) {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	base := fs.String("dir", os.TempDir(), "parent of the data directory")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp(*base, "etcdbench-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	peer, err := freeURL()
	if err != nil {
		return nil, err
	}
	client, err := freeURL()
	if err != nil {
		return nil, err
	}
	pu, _ := url.Parse(peer)
	cu, _ := url.Parse(client)
	cfg := embed.NewConfig()
	cfg.Name, cfg.Dir = "bench", dir
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{*pu}, []url.URL{*pu}
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{*cu}, []url.URL{*cu}
	cfg.InitialCluster = "bench=" + peer
	cfg.LogLevel = "fatal" // a Close logs its closed listeners at error level
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return nil, err
	}
	defer e.Close()
	select {
	case <-e.Server.ReadyNotify():
	case <-time.After(60 * time.Second):
		return nil, fmt.Errorf("member not ready")
	}
	hello, _ := json.Marshal(serveHello{Client: client})
	fmt.Println(string(hello))
	done := make(chan struct{})
	go func() { _, _ = bufio.NewReader(os.Stdin).ReadString(0); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
	}
	return nil, nil
}

// child is a re-executed etcdbench child speaking lines on its stdin and stdout.
type child struct {
	cmd *exec.Cmd
	in  *bufio.Writer
	raw interface{ Close() error }
	out *bufio.Scanner
}

func startChild(ctx context.Context, hello any, args ...string) (*child, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, exe, args...)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	c := &child{cmd: cmd, in: bufio.NewWriter(in), raw: in, out: bufio.NewScanner(out)}
	if !c.out.Scan() {
		c.stop()
		return nil, fmt.Errorf("child %s did not start", args[0])
	}
	if err := json.Unmarshal(c.out.Bytes(), hello); err != nil {
		c.stop()
		return nil, err
	}
	return c, nil
}

func (c *child) ask(line string, answer any) error {
	if _, err := c.in.WriteString(line + "\n"); err != nil {
		return err
	}
	if err := c.in.Flush(); err != nil {
		return err
	}
	if !c.out.Scan() {
		return fmt.Errorf("child ended")
	}
	return json.Unmarshal(c.out.Bytes(), answer)
}

func (c *child) stop() {
	_, _ = c.in.WriteString("quit\n")
	_ = c.in.Flush()
	_ = c.raw.Close()
	done := make(chan struct{})
	go func() { _ = c.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		_ = c.cmd.Process.Kill()
		<-done
	}
}

// startServer starts the etcd member child and returns its client URL.
func startServer(ctx context.Context, dir string) (*child, string, error) {
	var h serveHello
	c, err := startChild(ctx, &h, "serve", "-dir", dir)
	if err != nil {
		return nil, "", err
	}
	return c, h.Client, nil
}

// simMinionID is the i-th held minion of the sim child (both processes derive it).
func simMinionID(i int) string { return fmt.Sprintf("client-00000000-0000-4000-8000-%012d", i) }

type simHello struct {
	Request string `json:"request"`
	Events  string `json:"events"`
	KeyFile string `json:"key_file"`
	PKIDir  string `json:"pki_dir"`
}

type simStats struct {
	Runs int64 `json:"runs"` // oduflow_job.run publications that reached a held minion
}

// cmdSim is the simulator child of inflight: a salttest master with n held minions sharing one key pair
// (a key is accepted per minion id, so each id's capability check and key pinning pass; no receipt is
// ever verified, since their oduflow_job.run never returns until the child quits). It prints a
// simHello line, then answers each "stats" line with a simStats line; "quit" or EOF ends it.
func cmdSim(ctx context.Context, args []string) (any, error) {
	fs := flag.NewFlagSet("sim", flag.ContinueOnError)
	n := fs.Int("minions", 5000, "held minions")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "ebsim")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	sim, err := salttest.Start(ctx, salttest.WithDir(dir), salttest.WithLogger(discard()))
	if err != nil {
		return nil, err
	}
	pub := fakeminion.NewModel(simMinionID(0)).PublicKeyPEM()
	var runs atomic.Int64
	release := make(chan struct{})
	held := func(ctx context.Context, job salttest.Job) (any, int) {
		switch job.Fun {
		case "test.ping":
			return true, 0
		case "oduflow_job.capabilities":
			return map[string]any{"protocol": int64(1), "module": "oduflow_job", "pillar_ready": true,
				"runtime_guard": true, "proof": map[string]any{"alg": receiptproof.Alg, "ready": true,
					"backend": "go", "error": ""}}, 0
		case "oduflow_job.run":
			runs.Add(1)
			select {
			case <-release:
			case <-ctx.Done():
			}
			return "oduflow_job: released", 1
		}
		return "'" + job.Fun + "' is not available.", 254
	}
	for i := range *n {
		if err := sim.AcceptMinionKey(simMinionID(i), pub); err != nil {
			return nil, err
		}
		sim.AddMinion(simMinionID(i), held)
	}
	hello, _ := json.Marshal(simHello{Request: sim.Addr(), Events: sim.EventsAddr(), KeyFile: sim.KeyFile(),
		PKIDir: sim.PKIDir()})
	fmt.Println(string(hello))
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() && sc.Text() != "quit" {
		st, _ := json.Marshal(simStats{Runs: runs.Load()})
		fmt.Println(string(st))
	}
	close(release)
	_ = sim.Close()
	return nil, nil
}
