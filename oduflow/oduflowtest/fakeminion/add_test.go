package fakeminion_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/oduflow/oduflow-go/oduflow"
	"github.com/oduflow/oduflow-go/oduflow/oduflowtest"
	"github.com/oduflow/oduflow-go/oduflow/oduflowtest/fakeminion"
	"github.com/oduflow/oduflow-go/receipt"
	"github.com/oduflow/oduflow-go/salt"
	"github.com/oduflow/oduflow-go/salt/salttest"
)

func startMaster(t *testing.T) *salttest.Master {
	t.Helper()
	m, err := salttest.Start(context.Background(), salttest.WithDir(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close() })
	return m
}

// ping asks a dispatcher pinned to master's accepted keys whether minion id is ready: reachable through
// the master, protocol 1, and a receipt proof it can verify.
func ping(t *testing.T, master *salttest.Master, id string) *oduflow.Readiness {
	t.Helper()
	c, err := salt.NewClient(master.Addr(), salt.WithAuth(salt.UserKey("root", master.KeyFile())))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Close() }()
	d, err := oduflow.New(c, oduflow.SaltEvents(master.EventsAddr()), oduflow.WithPKIDir(master.PKIDir()),
		oduflow.WithClaimStore(oduflowtest.NewMemoryStore()))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = d.Close(closedContext()) }()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	r, err := d.Ping(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func acceptedKey(t *testing.T, master *salttest.Master, id string) []byte {
	t.Helper()
	pub, err := os.ReadFile(filepath.Join(master.PKIDir(), "minions", id))
	if err != nil {
		t.Fatalf("no accepted key for %s: %v", id, err)
	}
	return pub
}

// Add accepts the model's own key (the one its proofs are signed with) and routes the minion's jobs to it.
func TestAddAcceptsKeyAndRoutes(t *testing.T) {
	master := startMaster(t)
	m := fakeminion.NewModel("client-" + receipt.NewRequestID())
	if err := fakeminion.Add(master, m); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(acceptedKey(t, master, m.ID()), m.PublicKeyPEM()) {
		t.Fatal("accepted key is not the model's key")
	}
	if r := ping(t, master, m.ID()); !r.KeyAccepted || !r.Reachable || r.Protocol != 1 || !r.Proof {
		t.Fatalf("readiness: %+v", r)
	}
	if m.Calls("oduflow_job.capabilities") == 0 {
		t.Fatal("the model answered no capabilities call")
	}
	if err := fakeminion.Add(master, fakeminion.NewModel("../escape")); err == nil {
		t.Fatal("unsafe minion id accepted")
	}
}

// AddPython provisions the Python minion's key pair (private half in its pki dir, public half accepted).
func TestAddPythonAcceptsProvisionedKey(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 not installed")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	h, err := fakeminion.StartPython(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close() })
	master := startMaster(t)
	id := "client-" + receipt.NewRequestID()
	if err := fakeminion.AddPython(master, h, id); err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(acceptedKey(t, master, id), []byte("BEGIN PUBLIC KEY")) {
		t.Fatal("accepted key is not a PEM public key")
	}
	if _, err := os.Stat(filepath.Join(h.MinionDir(id), "pki", "minion.pem")); err != nil {
		t.Fatalf("private key not provisioned: %v", err)
	}
	if r := ping(t, master, id); !r.KeyAccepted || !r.Reachable || r.Protocol != 1 || !r.Proof {
		t.Fatalf("readiness: %+v", r)
	}
}

// closedContext is a context that has already ended: Close(closedContext()) stops at once, draining
// nothing (what Close did before it took a drain deadline).
func closedContext() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}
