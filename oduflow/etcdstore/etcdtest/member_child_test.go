package etcdtest

import (
	"bufio"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
)

// memberChildEnv makes the test binary a single etcd member in a process of its own (runMemberChild):
// a test that measures its own allocations (runtime.MemStats) then counts the client's only, not the
// server's answering it.
const memberChildEnv = "ODUFLOW_ETCDTEST_MEMBER_DIR"

// runMemberChild serves one member on a free loopback port until its stdin closes, printing its client
// URL on stdout. It returns -1 when the process is not such a child.
func runMemberChild() int {
	dir := os.Getenv(memberChildEnv)
	if dir == "" {
		return -1
	}
	cfg := embed.NewConfig()
	cfg.Name = "m0"
	cfg.Dir = dir
	peer, client := "http://127.0.0.1:"+os.Getenv("ODUFLOW_ETCDTEST_PEER_PORT"), "http://127.0.0.1:"+os.Getenv("ODUFLOW_ETCDTEST_CLIENT_PORT")
	pu, _ := url.Parse(peer)
	cu, _ := url.Parse(client)
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{*pu}, []url.URL{*pu}
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{*cu}, []url.URL{*cu}
	cfg.InitialCluster = "m0=" + peer
	cfg.LogLevel = "error"
	cfg.UnsafeNoFsync = true
	cfg.MaxRequestBytes = 3 << 20
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	select {
	case <-e.Server.ReadyNotify():
	case <-time.After(60 * time.Second):
		fmt.Fprintln(os.Stderr, "member not ready")
		return 2
	}
	fmt.Println(client)
	_, _ = io.Copy(io.Discard, os.Stdin)
	e.Close()
	return 0
}

// startMemberProcess starts a member in a child process and returns its client URL; the member stops
// at cleanup.
func startMemberProcess(t testing.TB) string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), memberChildEnv+"="+tempDir(),
		fmt.Sprintf("ODUFLOW_ETCDTEST_PEER_PORT=%d", freePort(t)),
		fmt.Sprintf("ODUFLOW_ETCDTEST_CLIENT_PORT=%d", freePort(t)))
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = stdin.Close()
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("member process: %v", err)
	}
	return strings.TrimSpace(line)
}
