package oduflowtest_test

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/oduflow/oduflow-go/oduflow/claims"
	"github.com/oduflow/oduflow-go/oduflow/filestore"
	"github.com/oduflow/oduflow-go/oduflow/oduflowtest"
	"github.com/oduflow/oduflow-go/receipt"
)

// fileFactory: every backend is a claim directory; a location is its path, so a child reaches it.
func fileFactory() oduflowtest.StoreFactory {
	return oduflowtest.StoreFactory{
		Capabilities: oduflowtest.Capabilities{MultiProcess: true},
		New:          func(t testing.TB) string { return filepath.Join(t.TempDir(), "claims") },
		Open: func(_ context.Context, dir string) (oduflowtest.Store, error) {
			return filestore.Open(dir)
		},
		OpenWithWindows: func(_ context.Context, dir string, grace, expiry time.Duration) (oduflowtest.Store, error) {
			return filestore.Open(dir, filestore.WithStatusWindows(grace, expiry))
		},
		Corrupt: func(_ context.Context, dir, requestID string, data []byte) error {
			// Through a temporary file and a rename, as the store writes: the record is whole or absent.
			tmp := filepath.Join(dir, ".corrupt-"+requestID)
			if err := os.WriteFile(tmp, data, 0o600); err != nil {
				return err
			}
			return os.Rename(tmp, filepath.Join(dir, requestID+".json"))
		},
	}
}

func TestFileClaimStoreConformance(t *testing.T) {
	oduflowtest.TestClaimStore(t, fileFactory())
}

// memoryBackends maps a location to its in-memory store (one process, so a map is the whole backend).
type memoryBackends struct {
	mu     sync.Mutex
	stores map[string]*oduflowtest.MemoryStore
}

func (b *memoryBackends) new(t testing.TB) string {
	loc := "mem:" + receipt.NewRequestID()
	b.mu.Lock()
	b.stores[loc] = oduflowtest.NewMemoryStore()
	b.mu.Unlock()
	t.Cleanup(func() { b.mu.Lock(); delete(b.stores, loc); b.mu.Unlock() })
	return loc
}

func (b *memoryBackends) get(loc string) *oduflowtest.MemoryStore {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.stores[loc]
}

func memoryFactory() oduflowtest.StoreFactory {
	b := &memoryBackends{stores: map[string]*oduflowtest.MemoryStore{}}
	return oduflowtest.StoreFactory{
		New: b.new,
		// Every handle is the same store: the memory store has no replicas of its own.
		Open: func(_ context.Context, loc string) (oduflowtest.Store, error) { return b.get(loc), nil },
		Corrupt: func(_ context.Context, loc, requestID string, data []byte) error {
			b.get(loc).Corrupt(requestID, data)
			return nil
		},
	}
}

func TestMemoryStoreConformance(t *testing.T) {
	oduflowtest.TestClaimStore(t, memoryFactory())
}

// TestExpiringLeasesConformance runs the suite's TTL clauses (which neither the file nor the memory store
// needs) against the memory store behind handles whose leases expire once their session is killed, the way
// an etcd session's do.
func TestExpiringLeasesConformance(t *testing.T) {
	const ttl = 300 * time.Millisecond
	mem := memoryFactory()
	f := mem
	f.Capabilities.LeaseTTL = ttl
	f.Open = func(ctx context.Context, loc string) (oduflowtest.Store, error) {
		inner, err := mem.Open(ctx, loc)
		if err != nil {
			return nil, err
		}
		return &sessionStore{Store: inner}, nil
	}
	f.KillSession = func(s oduflowtest.Store) {
		ss := s.(*sessionStore)
		time.AfterFunc(ttl, ss.expire)
	}
	oduflowtest.TestClaimStore(t, f)
}

// sessionStore is one handle with a session: its leases are its own, and expire drops them all, as an
// etcd lease's TTL running out deletes every key of the session.
type sessionStore struct {
	oduflowtest.Store
	mu     sync.Mutex
	leases []claims.Lease
}

func (s *sessionStore) expire() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, l := range s.leases {
		_ = l.Release()
	}
}

func (s *sessionStore) track(l claims.Lease, err error) (claims.Lease, error) {
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.leases = append(s.leases, l)
	return &sessionLease{Lease: l, s: s}, nil
}

// sessionLease marks a lease as this handle's: another handle's CompareAndSwapHeld sees a foreign lease.
type sessionLease struct {
	claims.Lease
	s *sessionStore
}

func (s *sessionStore) TryRequestLock(ctx context.Context, requestID string) (claims.Lease, error) {
	return s.track(s.Store.TryRequestLock(ctx, requestID))
}

func (s *sessionStore) AcquireClientLease(ctx context.Context, minionID string, maxWait time.Duration) (claims.Lease, error) {
	return s.track(s.Store.AcquireClientLease(ctx, minionID, maxWait))
}

func (s *sessionStore) CompareAndSwapHeld(ctx context.Context, next *claims.Claim, held ...claims.Lease) (*claims.Claim, error) {
	inner := make([]claims.Lease, len(held))
	for i, l := range held {
		inner[i] = l
		if sl, ok := l.(*sessionLease); ok && sl.s == s {
			inner[i] = sl.Lease
		}
	}
	return s.Store.CompareAndSwapHeld(ctx, next, inner...)
}
