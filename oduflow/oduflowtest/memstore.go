package oduflowtest

import (
	"context"
	"sync"
	"time"

	"github.com/cockroachdb/errors"

	"github.com/oduflow/oduflow-go/internal/errmark"
	"github.com/oduflow/oduflow-go/oduflow/claims"
	"github.com/oduflow/oduflow-go/receipt"
)

// MemoryStore is an claims.ClaimStore and claims.Leases held in memory, for unit tests of services that
// embed the dispatcher. It is NOT durable (a restart forgets every claim, so it cannot keep the
// at-most-once promise across restarts) and it is single-process (other processes cannot see its claims
// or its leases). Pass it with oduflow.WithClaimStore (it is its own Leases). Records are kept encoded,
// exactly as a durable store keeps them, so callers never share memory with the store. It passes
// TestClaimStore without MultiProcess. Safe for concurrent use.
type MemoryStore struct {
	mu      sync.Mutex
	records map[string][]byte   // request id -> encoded claim
	clients map[string][]string // minion id -> request ids in creation order
	locks   map[string]*memHold // lock name -> current holder
	fences  map[string]uint64   // minion id -> last fencing token issued
	nextID  uint64
}

type memHold struct {
	id       uint64
	released chan struct{} // closed on release: wakes waiters
}

// NewMemoryStore returns an empty store.
func NewMemoryStore() *MemoryStore {
	return &MemoryStore{records: map[string][]byte{}, clients: map[string][]string{},
		locks: map[string]*memHold{}, fences: map[string]uint64{}}
}

// Corrupt stores data verbatim as the record of requestID (tests of corrupt-record handling).
func (s *MemoryStore) Corrupt(requestID string, data []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.records[requestID] = append([]byte(nil), data...)
}

func checkRequestID(requestID string) error {
	if err := receipt.ValidateRequestID(requestID); err != nil {
		return errmark.Mark(errors.Wrap(err, "oduflowtest: invalid request id"), claims.ErrInvalidInput)
	}
	return nil
}

// decodeLocked decodes the record of requestID; s.mu is held.
func (s *MemoryStore) decodeLocked(requestID string) (*claims.Claim, error) {
	data, ok := s.records[requestID]
	if !ok {
		return nil, errors.Wrap(claims.ErrNoClaim, "oduflowtest: memory store")
	}
	c, err := unmarshalClaim(data)
	if err != nil {
		return nil, errmark.Mark(err, claims.ErrCorruptClaim)
	}
	if c.RequestID != requestID {
		return nil, errors.Wrap(claims.ErrCorruptClaim, "oduflowtest: record holds another request")
	}
	return c, nil
}

// Create implements claims.ClaimStore.
func (s *MemoryStore) Create(ctx context.Context, c *claims.Claim) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	cp := *c
	cp.Generation = 1
	if err := cp.Validate(); err != nil {
		return err
	}
	data, err := cp.MarshalBinary()
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.records[cp.RequestID]; ok {
		return errors.Wrap(claims.ErrClaimExists, "oduflowtest: memory store")
	}
	s.records[cp.RequestID] = data
	s.clients[cp.MinionID] = append(s.clients[cp.MinionID], cp.RequestID)
	c.Generation = 1
	return nil
}

// Get implements claims.ClaimStore.
func (s *MemoryStore) Get(ctx context.Context, requestID string) (*claims.Claim, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := checkRequestID(requestID); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.decodeLocked(requestID)
}

// CompareAndSwap implements claims.ClaimStore.
func (s *MemoryStore) CompareAndSwap(ctx context.Context, next *claims.Claim) (*claims.Claim, error) {
	return s.compareAndSwap(ctx, next, nil, false)
}

// CompareAndSwapHeld implements claims.ClaimStore: the generation, identity and lease checks and the write
// happen under one mutex. The intent (claimed to dispatching) gets the client's next fencing token, a
// per-client counter kept under the same mutex.
func (s *MemoryStore) CompareAndSwapHeld(ctx context.Context, next *claims.Claim, held ...claims.Lease) (*claims.Claim, error) {
	return s.compareAndSwap(ctx, next, held, true)
}

func (s *MemoryStore) compareAndSwap(ctx context.Context, next *claims.Claim, held []claims.Lease, guarded bool) (*claims.Claim, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := next.Validate(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, err := s.decodeLocked(next.RequestID)
	if err != nil {
		return nil, err
	}
	if cur.Generation != next.Generation {
		return cur, errors.Wrapf(claims.ErrConflict, "generation %d, expected %d",
			errors.Safe(cur.Generation), errors.Safe(next.Generation))
	}
	if !sameIdentity(cur, next) {
		return cur, errors.Wrap(claims.ErrConflict, "identity fields are immutable")
	}
	for _, l := range held {
		ml, ok := l.(*memLease)
		if !ok || ml.s != s || !ml.heldLocked() {
			return cur, errors.WithStack(claims.ErrLeaseLost)
		}
	}
	out := *next
	out.Generation = cur.Generation + 1
	out.FenceToken = cur.FenceToken // issued once, never changed
	if guarded && cur.Phase == claims.PhaseClaimed && out.Phase == claims.PhaseDispatching {
		// Above every token of the client and above the caller's floor (next.FenceToken).
		last := max(s.fences[out.MinionID], next.FenceToken)
		if last >= claims.MaxFenceToken {
			return cur, errors.Wrap(claims.ErrClaimStore, "oduflowtest: fence tokens exhausted")
		}
		out.FenceToken = last + 1
	}
	data, err := out.MarshalBinary()
	if err != nil {
		return nil, err
	}
	s.records[out.RequestID] = data
	if out.FenceToken > s.fences[out.MinionID] {
		s.fences[out.MinionID] = out.FenceToken
	}
	return unmarshalClaim(data) // a copy the caller cannot share with next
}

func sameIdentity(a, b *claims.Claim) bool {
	return a.MinionID == b.MinionID && a.RequestID == b.RequestID && a.Profile == b.Profile &&
		a.Role == b.Role && a.StateDigest == b.StateDigest && a.JID == b.JID && a.PayloadRef == b.PayloadRef &&
		a.CreatedAt.Equal(b.CreatedAt) && a.Protocol == b.Protocol
}

// ListByClient implements claims.ClaimStore. A corrupt claim of the client fails the whole list (as in
// the file store): hiding it could hide a dispatched request from the quarantine check.
func (s *MemoryStore) ListByClient(ctx context.Context, minionID string) ([]*claims.Claim, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := receipt.ValidateMinionID(minionID); err != nil {
		return nil, errmark.Mark(errors.Wrap(err, "oduflowtest: invalid minion id"), claims.ErrInvalidInput)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*claims.Claim
	for _, req := range s.clients[minionID] {
		c, err := s.decodeLocked(req)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

const (
	memRequestLock = "run/"
	memClientLease = "lease/"
)

type memLease struct {
	s    *MemoryStore
	name string
	id   uint64
}

// heldLocked reports whether l is still the holder; s.mu is held.
func (l *memLease) heldLocked() bool {
	h := l.s.locks[l.name]
	return h != nil && h.id == l.id
}

// Held implements claims.Lease.
func (l *memLease) Held() bool {
	l.s.mu.Lock()
	defer l.s.mu.Unlock()
	return l.heldLocked()
}

// Release implements claims.Lease (idempotent).
func (l *memLease) Release() error {
	l.s.mu.Lock()
	defer l.s.mu.Unlock()
	if h := l.s.locks[l.name]; h != nil && h.id == l.id {
		delete(l.s.locks, l.name)
		close(h.released)
	}
	return nil
}

// tryLock takes name if it is free; otherwise it returns the channel closed when the holder releases.
func (s *MemoryStore) tryLock(name string) (*memLease, <-chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if h := s.locks[name]; h != nil {
		return nil, h.released
	}
	s.nextID++
	s.locks[name] = &memHold{id: s.nextID, released: make(chan struct{})}
	return &memLease{s: s, name: name, id: s.nextID}, nil
}

// TryRequestLock implements claims.Leases.
func (s *MemoryStore) TryRequestLock(ctx context.Context, requestID string) (claims.Lease, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := checkRequestID(requestID); err != nil {
		return nil, err
	}
	l, _ := s.tryLock(memRequestLock + requestID)
	if l == nil {
		return nil, errors.Wrap(claims.ErrLeaseBusy, "oduflowtest: request lock")
	}
	return l, nil
}

// RequestLockHeld implements claims.Leases.
func (s *MemoryStore) RequestLockHeld(ctx context.Context, requestID string) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.locks[memRequestLock+requestID] != nil, nil
}

// AcquireClientLease implements claims.Leases: it waits for the holder's release, at most maxWait.
func (s *MemoryStore) AcquireClientLease(ctx context.Context, minionID string, maxWait time.Duration) (claims.Lease, error) {
	if err := receipt.ValidateMinionID(minionID); err != nil {
		return nil, errmark.Mark(errors.Wrap(err, "oduflowtest: invalid minion id"), claims.ErrInvalidInput)
	}
	timer := time.NewTimer(maxWait)
	defer timer.Stop()
	for {
		if err := ctx.Err(); err != nil {
			return nil, errors.Wrap(err, "oduflowtest: waiting for the client lease")
		}
		l, released := s.tryLock(memClientLease + minionID)
		if l != nil {
			return l, nil
		}
		select {
		case <-released:
		case <-timer.C:
			return nil, errors.Wrapf(claims.ErrLeaseBusy, "still held after %s", maxWait)
		case <-ctx.Done():
			return nil, errors.Wrap(ctx.Err(), "oduflowtest: waiting for the client lease")
		}
	}
}

var (
	_ claims.ClaimStore = (*MemoryStore)(nil)
	_ claims.Leases     = (*MemoryStore)(nil)
	_ Store             = (*MemoryStore)(nil)
)

// unmarshalClaim decodes a stored claim ((*claims.Claim).UnmarshalBinary) into a new claim.
func unmarshalClaim(data []byte) (*claims.Claim, error) {
	var c claims.Claim
	if err := c.UnmarshalBinary(data); err != nil {
		return nil, err
	}
	return &c, nil
}
