package oduflow

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/oduflow/oduflow-go/internal/hostclock"
	"github.com/oduflow/oduflow-go/internal/safefile"
	"github.com/oduflow/oduflow-go/internal/testwait"
	"github.com/oduflow/oduflow-go/oduflow/claims"
	"github.com/oduflow/oduflow-go/oduflow/filestore"
	"github.com/oduflow/oduflow-go/receipt"
	"github.com/oduflow/oduflow-go/salt"
)

type fakeClock struct {
	mu sync.Mutex
	t  time.Time
	// host is the host clock of the file store of a Dispatcher made withClock with this clock
	// (advanceWindows, setHostClock move it).
	host hostclock.Clock
}

func newFakeClock() *fakeClock { return &fakeClock{t: time.Now().UTC()} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func (c *fakeClock) Set(t time.Time) {
	c.mu.Lock()
	c.t = t
	c.mu.Unlock()
}

// waitUntil polls cond until it holds (true) or d has passed (false), for a state no hook or Watch
// announces (testwait.Poll).
func waitUntil(d time.Duration, cond func() bool) bool { return testwait.Poll(d, cond) }

func newMinionID() string { return "client-" + uuid.NewString() }

// noNetwork is a Publisher/EventSource that fails the test if used.
type noNetwork struct{ t testing.TB }

func (n noNetwork) Publish(context.Context, salt.PublishRequest) (*salt.PublishResult, error) {
	n.t.Errorf("unexpected publish")
	return nil, salt.ErrNotSent
}

func (n noNetwork) Subscribe(context.Context) (Subscription, error) {
	n.t.Errorf("unexpected subscribe")
	return nil, salt.ErrNotSent
}

func claimDir(t testing.TB) string {
	dir := filepath.Join(t.TempDir(), "claims")
	return dir
}

func readFixture(t testing.TB, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "legacy", name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func mustFileStore(t testing.TB, d *Dispatcher) *filestore.Store {
	t.Helper()
	fs, ok := d.store.(*filestore.Store)
	if !ok {
		t.Fatal("not a file store")
	}
	return fs
}

// The file store's layout (oduflow/filestore), as the tests that plant hostile files in a claim
// directory name it; a store that moved them would fail those tests.
const (
	fsIndexDir       = "clients" // clients/<minion id>/<request id>
	fsRequestLockPfx = "run-"    // run-<request id>.lock
	fsClientLeasePfx = "lease-"  // lease-<minion id>.lock
	fsOpenDir        = "open"    // open/<minion id>/<request id>
)

// claimName is the name of a request's claim file in the claim directory.
func claimName(requestID string) string { return requestID + ".json" }

// claimFiles is the safe file store on fs's claim directory: tests read and write claim files through it
// (hostile records, fixtures), beside the store.
func claimFiles(t testing.TB, fs *filestore.Store) *safefile.Store {
	t.Helper()
	st, err := safefile.OpenStore(fs.Dir())
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// newTestClaim is a protocol-1 claim in phase claimed.
func newTestClaim(minion string) *claims.Claim {
	return &claims.Claim{Protocol: claimProtocol, MinionID: minion, RequestID: receipt.NewRequestID(),
		Profile: receipt.ProfileConfigure, Role: "roles.client_stack", JID: "20261201000000000000",
		Phase: claims.PhaseClaimed, CreatedAt: time.Now().UTC()}
}

// encodeClaim is the claim as a store keeps it (MarshalBinary).
func encodeClaim(c *claims.Claim) ([]byte, error) { return c.MarshalBinary() }

// installFixture writes a legacy claim into the dispatcher's claim directory and returns it decoded.
func installFixture(t testing.TB, d *Dispatcher, name string) *claims.Claim {
	t.Helper()
	data := readFixture(t, name)
	c, err := claims.Decode(data)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if err := claimFiles(t, mustFileStore(t, d)).WriteAtomic(claimName(c.RequestID), data); err != nil {
		t.Fatal(err)
	}
	return c
}

// closedContext is a context that has already ended: Close(closedContext()) stops at once, draining
// nothing (what Close did before it took a drain deadline).
func closedContext() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}
