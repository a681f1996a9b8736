package oduflow

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/cockroachdb/errors"

	"github.com/oduflow/oduflow-go/receipt"
)

// DefaultClaimDir is where claims live unless WithClaimDir says otherwise.
const DefaultClaimDir = "/var/cache/salt/oduflow-apply"

const (
	claimSuffix    = ".json"
	recordLockPfx  = "rec-"   // short-held record lock serialising fenced updates of one claim
	requestLockPfx = "run-"   // the request's execution lock ("holds the execution lease")
	clientLeasePfx = "lease-" // the per-client execution lease, shared by all profiles
	recordLockWait = 30 * time.Second
)

// FileClaimStore keeps one claim file per request (<request id>.json, mode 0600) in a private directory
// (0700, owned by the service account) through receipt.Store: exclusive temp file, fsync, rename,
// directory fsync; opens refuse symlinks, foreign owners, group/other bits and multiply linked files.
// Create uses CreateExclusive; CompareAndSwap runs under a per-request record flock with a generation
// check. It also implements Leases with flock locks, which the kernel releases when a holder dies.
// Safe for concurrent use by any number of goroutines and processes sharing the directory.
type FileClaimStore struct {
	st *receipt.Store

	mu     sync.Mutex
	owners map[string]string // request id -> minion id (immutable once created; an index cache)
}

// OpenFileClaimStore opens (creating it 0700 when missing) the claim directory.
func OpenFileClaimStore(dir string) (*FileClaimStore, error) {
	st, err := receipt.OpenStore(dir, receipt.WithCreate())
	if err != nil {
		return nil, errors.Wrap(err, "oduflow: open claim directory")
	}
	return &FileClaimStore{st: st, owners: make(map[string]string)}, nil
}

// Dir is the claim directory.
func (s *FileClaimStore) Dir() string { return s.st.Dir() }

// Store exposes the underlying safe store (tests, tooling).
func (s *FileClaimStore) Store() *receipt.Store { return s.st }

func claimName(requestID string) string { return requestID + claimSuffix }

// Create implements ClaimStore.
func (s *FileClaimStore) Create(ctx context.Context, c *Claim) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	cp := c.clone()
	cp.Generation = 1
	if err := cp.Validate(); err != nil {
		return err
	}
	data, err := EncodeClaim(cp)
	if err != nil {
		return err
	}
	if err := s.st.CreateExclusive(claimName(cp.RequestID), data); err != nil {
		if errors.Is(err, receipt.ErrExist) {
			return errors.Mark(errors.Wrap(err, "oduflow: create claim"), ErrClaimExists)
		}
		return errors.Wrap(err, "oduflow: create claim")
	}
	c.Generation = 1
	s.remember(cp)
	return nil
}

// Get implements ClaimStore.
func (s *FileClaimStore) Get(ctx context.Context, requestID string) (*Claim, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := receipt.ValidateRequestID(requestID); err != nil {
		return nil, invalid(err, "request id")
	}
	return s.read(requestID)
}

func (s *FileClaimStore) read(requestID string) (*Claim, error) {
	data, err := s.st.Read(claimName(requestID))
	if err != nil {
		if errors.Is(err, receipt.ErrNotExist) {
			return nil, errors.Mark(errors.Wrap(err, "oduflow: read claim"), ErrNoClaim)
		}
		return nil, errors.Wrap(err, "oduflow: read claim")
	}
	c, err := DecodeClaim(data)
	if err != nil {
		return nil, err
	}
	if c.RequestID != requestID {
		return nil, errors.Wrap(ErrCorruptClaim, "claim file holds another request")
	}
	s.remember(c)
	return c, nil
}

func (s *FileClaimStore) remember(c *Claim) {
	s.mu.Lock()
	s.owners[c.RequestID] = c.MinionID
	s.mu.Unlock()
}

// CompareAndSwap implements ClaimStore.
func (s *FileClaimStore) CompareAndSwap(ctx context.Context, next *Claim) (*Claim, error) {
	if err := next.Validate(); err != nil {
		return nil, err
	}
	lk, err := s.st.LockWait(ctx, recordLockPfx+next.RequestID, recordLockWait)
	if err != nil {
		return nil, errors.Wrap(err, "oduflow: claim record lock")
	}
	defer func() { _ = lk.Release() }()
	cur, err := s.read(next.RequestID)
	if err != nil {
		return nil, err
	}
	if cur.Generation != next.Generation {
		return cur, errors.Wrapf(ErrConflict, "generation %d, expected %d",
			errors.Safe(cur.Generation), errors.Safe(next.Generation))
	}
	if !sameIdentity(cur, next) {
		return cur, errors.Wrap(ErrConflict, "identity fields are immutable")
	}
	out := next.clone()
	out.Generation = cur.Generation + 1
	data, err := EncodeClaim(out)
	if err != nil {
		return nil, err
	}
	if err := s.st.WriteAtomic(claimName(out.RequestID), data); err != nil {
		return nil, errors.Wrap(err, "oduflow: write claim")
	}
	return out, nil
}

func sameIdentity(a, b *Claim) bool {
	return a.MinionID == b.MinionID && a.RequestID == b.RequestID && a.Profile == b.Profile &&
		a.Role == b.Role && a.StateDigest == b.StateDigest && a.JID == b.JID && a.PayloadRef == b.PayloadRef &&
		a.CreatedAt.Equal(b.CreatedAt) && a.Protocol == b.Protocol
}

// ListByClient implements ClaimStore. Claim files are indexed by request id only; the minion of each claim
// is immutable, so it is cached after the first read and later calls read only this client's claims.
func (s *FileClaimStore) ListByClient(ctx context.Context, minionID string) ([]*Claim, error) {
	if err := receipt.ValidateMinionID(minionID); err != nil {
		return nil, invalid(err, "minion id")
	}
	names, err := s.st.List("")
	if err != nil {
		return nil, errors.Wrap(err, "oduflow: list claims")
	}
	var out []*Claim
	for _, n := range names {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		req, ok := strings.CutSuffix(n, claimSuffix)
		if !ok || receipt.ValidateRequestID(req) != nil {
			continue
		}
		s.mu.Lock()
		owner, known := s.owners[req]
		s.mu.Unlock()
		if known && owner != minionID {
			continue
		}
		c, err := s.read(req)
		if err != nil {
			if errors.Is(err, ErrNoClaim) {
				continue
			}
			return nil, err
		}
		if c.MinionID == minionID {
			out = append(out, c)
		}
	}
	return out, nil
}

type fileLease struct{ lk *receipt.Lock }

func (l fileLease) Release() error { return l.lk.Release() }

// TryRequestLock implements Leases.
func (s *FileClaimStore) TryRequestLock(ctx context.Context, requestID string) (Lease, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	lk, err := s.st.TryLock(requestLockPfx + requestID)
	if err != nil {
		if errors.Is(err, receipt.ErrLocked) {
			return nil, errors.Mark(err, ErrLeaseHeld)
		}
		return nil, errors.Wrap(err, "oduflow: request lock")
	}
	return fileLease{lk}, nil
}

// RequestLockHeld implements Leases.
func (s *FileClaimStore) RequestLockHeld(ctx context.Context, requestID string) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	held, err := s.st.IsLocked(requestLockPfx + requestID)
	if err != nil {
		if errors.Is(err, receipt.ErrNotExist) {
			return false, nil
		}
		return false, errors.Wrap(err, "oduflow: request lock state")
	}
	return held, nil
}

// AcquireClientLease implements Leases.
func (s *FileClaimStore) AcquireClientLease(ctx context.Context, minionID string, maxWait time.Duration) (Lease, error) {
	lk, err := s.st.LockWait(ctx, clientLeasePfx+minionID, maxWait)
	if err != nil {
		if errors.Is(err, receipt.ErrLocked) || errors.Is(err, context.DeadlineExceeded) {
			return nil, errors.Mark(err, ErrLeaseBusy)
		}
		return nil, errors.Wrap(err, "oduflow: client lease")
	}
	return fileLease{lk}, nil
}

var (
	_ ClaimStore = (*FileClaimStore)(nil)
	_ Leases     = (*FileClaimStore)(nil)
)
