package etcdtest

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"

	"github.com/oduflow/oduflow-go/internal/testwait"
	"github.com/oduflow/oduflow-go/oduflow"
	"github.com/oduflow/oduflow-go/oduflow/claims"
	"github.com/oduflow/oduflow-go/oduflow/etcdstore"
	"github.com/oduflow/oduflow-go/receipt"
)

// restartableMember is one member whose data directory can be swapped between runs, on fixed loopback
// ports (a member restarted from an earlier copy of its data): embedded, or the etcd binary bin.
type restartableMember struct {
	t            testing.TB
	dir          string
	peer, client string
	e            *embed.Etcd
	bin          string
	proc         *exec.Cmd
}

func newRestartableMember(t testing.TB, bin string) *restartableMember {
	m := &restartableMember{t: t, dir: t.TempDir() + "/member", bin: bin,
		peer: fmt.Sprintf("http://127.0.0.1:%d", freePort(t)), client: fmt.Sprintf("http://127.0.0.1:%d", freePort(t))}
	m.start()
	t.Cleanup(m.stop)
	return m
}

func (m *restartableMember) start() {
	m.t.Helper()
	if m.bin != "" {
		m.startProcess()
		return
	}
	cfg := embed.NewConfig()
	cfg.Name, cfg.Dir = "m0", m.dir
	cfg.ListenPeerUrls = []url.URL{mustURL(m.t, m.peer)}
	cfg.AdvertisePeerUrls = cfg.ListenPeerUrls
	cfg.ListenClientUrls = []url.URL{mustURL(m.t, m.client)}
	cfg.AdvertiseClientUrls = cfg.ListenClientUrls
	cfg.InitialCluster = "m0=" + m.peer
	cfg.InitialClusterToken = "oduflow-rewind"
	cfg.LogLevel = "error"
	cfg.UnsafeNoFsync = true
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		m.t.Fatal(err)
	}
	select {
	case <-e.Server.ReadyNotify():
	case <-time.After(60 * time.Second):
		m.t.Fatal("member not ready")
	}
	m.e = e
}

// startProcess runs the etcd binary on the member's directory and ports and waits until it answers.
func (m *restartableMember) startProcess() {
	m.t.Helper()
	cmd := exec.Command(m.bin, "--name", "m0", "--data-dir", m.dir,
		"--listen-client-urls", m.client, "--advertise-client-urls", m.client,
		"--listen-peer-urls", m.peer, "--initial-advertise-peer-urls", m.peer,
		"--initial-cluster", "m0="+m.peer, "--initial-cluster-token", "oduflow-rewind")
	if err := cmd.Start(); err != nil {
		m.t.Fatal(err)
	}
	m.proc = cmd
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{m.client}, DialTimeout: 2 * time.Second})
	if err != nil {
		m.t.Fatal(err)
	}
	defer cli.Close()
	testwait.Until(m.t, m.bin+" not answering", 30*time.Second, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_, err := cli.Get(ctx, "/health-probe")
		return err == nil
	})
}

func (m *restartableMember) stop() {
	if m.e != nil {
		m.e.Close()
		m.e = nil
	}
	if m.proc != nil {
		_ = m.proc.Process.Signal(syscall.SIGTERM)
		_ = m.proc.Wait()
		m.proc = nil
	}
}

// copyData copies the (stopped) member's data directory to dst.
func (m *restartableMember) copyData(dst string) {
	m.t.Helper()
	if out, err := exec.Command("cp", "-a", m.dir, dst).CombinedOutput(); err != nil {
		m.t.Fatalf("cp: %v %s", err, out)
	}
}

// restoreData replaces the (stopped) member's data directory by the copy src.
func (m *restartableMember) restoreData(src string) {
	m.t.Helper()
	if err := os.RemoveAll(m.dir); err != nil {
		m.t.Fatal(err)
	}
	if out, err := exec.Command("cp", "-a", src, m.dir).CombinedOutput(); err != nil {
		m.t.Fatalf("cp: %v %s", err, out)
	}
}

// TestRewoundClusterRefused: etcd restarted from an earlier copy of its data directory, taken before a
// request existed. The request was published once; the client (as clients do) repeats its Start with
// the same request id. Before the fix the rewound cluster had no claim, so Start created it again under
// a new JID and published the request a second time. Now the Store that has seen the later revision
// refuses every read of the rewound cluster with ErrRevisionRegressed (also ErrClaimStore: the CLI's
// exit 3) and nothing is published again; a second request for the client is refused the same way.
func TestRewoundClusterRefused(t *testing.T) {
	testRewound(t, newRestartableMember(t, ""))
}

// TestExternalRewind is TestRewoundClusterRefused against the etcd binary named by ODUFLOW_ETCD_BIN (for
// example Debian's etcd-server 3.4, /usr/bin/etcd), restarted as a process from a copy of its data
// directory. Skipped without it.
func TestExternalRewind(t *testing.T) {
	bin := os.Getenv("ODUFLOW_ETCD_BIN")
	if bin == "" {
		t.Skip("ODUFLOW_ETCD_BIN is not set (the etcd binary to restart from an earlier data copy)")
	}
	testRewound(t, newRestartableMember(t, bin))
}

func testRewound(t *testing.T, mem *restartableMember) {
	ctx := context.Background()
	st := openStores(t, []string{mem.client}, "/rewind", 1, etcdstore.WithTTL(2*time.Second), windowsOf(attackTimers()))[0]
	master := &fakeMaster{runs: make(map[string]int)}
	minion := newMinion()
	d := fakeDispatcher(t, st, master, minion)
	warm := newClaim(newMinion()) // some history before the copy
	if err := st.Create(ctx, warm); err != nil {
		t.Fatal(err)
	}
	mem.stop()
	earlier := t.TempDir() + "/earlier"
	mem.copyData(earlier)
	mem.start()

	req := receipt.NewRequestID()
	if _, err := startRetrying(ctx, d, minion, req); err != nil {
		t.Fatal(err)
	}
	waitRuns(t, master, req, 1)
	before := st.Revision()

	mem.stop()
	mem.restoreData(earlier)
	mem.start()

	_, err := startRetrying(ctx, d, minion, req)
	if !errors.Is(err, etcdstore.ErrRevisionRegressed) || !errors.Is(err, claims.ErrClaimStore) {
		t.Errorf("Start of the same request on the rewound cluster: %v, want ErrRevisionRegressed", err)
	}
	_, err = startRetrying(ctx, d, minion, receipt.NewRequestID())
	if !errors.Is(err, etcdstore.ErrRevisionRegressed) {
		t.Errorf("Start of another request on the rewound cluster: %v, want ErrRevisionRegressed", err)
	}
	if _, err := st.Get(ctx, req); !errors.Is(err, etcdstore.ErrRevisionRegressed) {
		t.Errorf("Get: %v", err)
	}
	drain(t, d) // a worker, had one started, has published by the time Close has drained it
	if n := master.runsOf(req); n != 1 {
		t.Fatalf("request published %d times", n)
	}
	t.Logf("high-water revision %d; the rewound cluster answers below it", before)
}

// startRetrying is Start, repeated while the member is still coming back (the client reconnects).
func startRetrying(ctx context.Context, d *oduflow.Dispatcher, minion, req string) (oduflow.Response, error) {
	deadline := time.Now().Add(20 * time.Second)
	for {
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		r, err := d.Start(cctx, minion, req, receipt.ProfileConfigure)
		cancel()
		if err == nil || errors.Is(err, etcdstore.ErrRevisionRegressed) || !errors.Is(err, claims.ErrClaimStore) ||
			time.Now().After(deadline) {
			return r, err
		}
		// a retry backoff while the member comes back (what a caller does)
		time.Sleep(100 * time.Millisecond)
	}
}
