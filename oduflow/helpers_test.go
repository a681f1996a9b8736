package oduflow

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/oduflow/oduflow-go/salt"
)

type fakeClock struct {
	mu sync.Mutex
	t  time.Time
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

// pollInterval is how often the tests' waits look again: short, as what they wait for is mostly a file
// or an in-process simulator's state.
const pollInterval = 5 * time.Millisecond

// waitUntil polls cond until it holds (true) or d has passed (false). The tests' waits for a state go
// through it (and their fixed sleeps are only for what must not happen meanwhile).
func waitUntil(d time.Duration, cond func() bool) bool {
	for deadline := time.Now().Add(d); !cond(); time.Sleep(pollInterval) {
		if time.Now().After(deadline) {
			return false
		}
	}
	return true
}

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

func mustFileStore(t testing.TB, d *Dispatcher) *FileClaimStore {
	t.Helper()
	fs, ok := d.store.(*FileClaimStore)
	if !ok {
		t.Fatal("not a file store")
	}
	return fs
}

// installFixture writes a legacy claim into the dispatcher's claim directory and returns it decoded.
func installFixture(t testing.TB, d *Dispatcher, name string) *Claim {
	t.Helper()
	data := readFixture(t, name)
	c, err := decodeClaim(data)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if err := mustFileStore(t, d).files().WriteAtomic(claimName(c.RequestID), data); err != nil {
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
