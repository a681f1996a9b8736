package oduflow

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/cockroachdb/errors"

	"github.com/oduflow/oduflow-go/internal/errmark"
	"github.com/oduflow/oduflow-go/internal/safefile"
	"github.com/oduflow/oduflow-go/receipt"
)

// defaultClaimDir is where claims live unless WithClaimDir says otherwise.
const defaultClaimDir = "/var/cache/salt/oduflow-apply"

const (
	claimSuffix    = ".json"
	recordLockPfx  = "rec-"   // short-held record lock serialising fenced updates of one claim
	requestLockPfx = "run-"   // the request's execution lock ("holds the execution lease")
	clientLeasePfx = "lease-" // the per-client execution lease, shared by all profiles
	recordLockWait = 30 * time.Second
	indexDirName   = "clients"       // clients/<minion id>/<request id>: the per-client index
	indexDoneName  = "index-v1.done" // present once every claim of the directory is indexed
)

// FileClaimStore keeps one claim file per request (<request id>.json, mode 0600) in a private directory
// (0700, owned by the service account) through safefile.Store: exclusive temp file, fsync, rename,
// directory fsync; opens refuse symlinks, foreign owners, group/other bits and multiply linked files.
// Create uses CreateExclusive; CompareAndSwap runs under a per-request record flock with a generation
// check. A per-client index (clients/<minion id>/<request id>, empty files, written before the claim) keeps
// ListByClient proportional to the client's own claims. Claims without an index entry (legacy claims
// copied in by an earlier runner) are indexed by a one-time scan the first time a store lists a client
// (recorded by the file index-v1.done); call Reindex after adding legacy claims later. It also implements
// Leases with kernel locks, which the kernel releases when a holder dies (filelease.go).
// Safe for concurrent use by any number of goroutines and processes sharing the directory.
type FileClaimStore struct {
	st *safefile.Store

	mu       sync.Mutex
	owners   map[string]string          // request id -> minion id (immutable once created)
	clients  map[string]*safefile.Store // open per-client index stores
	indexed  bool
	indexDir string

	leases leasePool // request locks and client leases (filelease.go)
}

// OpenFileClaimStore opens (creating it 0700 when missing) the claim directory.
func OpenFileClaimStore(dir string) (*FileClaimStore, error) {
	st, err := safefile.OpenStore(dir, safefile.WithCreate())
	if err != nil {
		return nil, errors.Wrap(err, "oduflow: open claim directory")
	}
	idx := filepath.Join(st.Dir(), indexDirName)
	if _, err := safefile.OpenStore(idx, safefile.WithCreate()); err != nil {
		return nil, errors.Wrap(err, "oduflow: open claim index directory")
	}
	return &FileClaimStore{st: st, owners: make(map[string]string), clients: make(map[string]*safefile.Store),
		indexDir: idx}, nil
}

// clientStore opens the index directory of one client (creating it when create is set). It returns nil,
// nil when the client has no index yet.
func (s *FileClaimStore) clientStore(minionID string, create bool) (*safefile.Store, error) {
	s.mu.Lock()
	cs := s.clients[minionID]
	s.mu.Unlock()
	if cs != nil {
		return cs, nil
	}
	var opts []safefile.StoreOption
	if create {
		opts = append(opts, safefile.WithCreate())
	}
	cs, err := safefile.OpenStore(filepath.Join(s.indexDir, minionID), opts...)
	if err != nil {
		if !create && errors.Is(err, safefile.ErrNotExist) {
			return nil, nil
		}
		return nil, errors.Wrap(err, "oduflow: open client index")
	}
	s.mu.Lock()
	s.clients[minionID] = cs
	s.mu.Unlock()
	return cs, nil
}

// index records that request belongs to minion (idempotent, durable).
func (s *FileClaimStore) index(minionID, requestID string) error {
	cs, err := s.clientStore(minionID, true)
	if err != nil {
		return err
	}
	err = cs.CreateExclusive(requestID, nil)
	if errors.Is(err, safefile.ErrExist) {
		// Already indexed, unless what holds the name is not a safe entry (a FIFO, socket, symlink, ...):
		// that is refused now, typed, rather than trusted.
		_, err = cs.Read(requestID)
	}
	if err != nil {
		return errors.Wrap(err, "oduflow: index claim")
	}
	return nil
}

// Reindex scans every claim of the directory and adds missing per-client index entries (legacy claims).
// A claim it cannot read stops the scan with an error matching ErrCorruptClaim that names it.
func (s *FileClaimStore) Reindex(ctx context.Context) error {
	names, err := s.st.List("")
	if err != nil {
		return errors.Wrap(err, "oduflow: list claims")
	}
	for _, n := range names {
		if err := ctx.Err(); err != nil {
			return err
		}
		req, ok := strings.CutSuffix(n, claimSuffix)
		if !ok || receipt.ValidateRequestID(req) != nil {
			continue
		}
		c, err := s.read(req)
		if err != nil {
			if errors.Is(err, ErrNoClaim) {
				continue
			}
			// Its owner is unknown, so no client can be proven clear of it: the scan stops (and is retried
			// by the next listing), naming the claim.
			return errors.WithStack(&unreadableClaimError{RequestID: req, Err: err})
		}
		if err := s.index(c.MinionID, c.RequestID); err != nil {
			return err
		}
	}
	if err := s.st.WriteAtomic(indexDoneName, []byte("1\n")); err != nil {
		return errors.Wrap(err, "oduflow: record index scan")
	}
	s.mu.Lock()
	s.indexed = true
	s.mu.Unlock()
	return nil
}

func (s *FileClaimStore) ensureIndexed(ctx context.Context) error {
	s.mu.Lock()
	done := s.indexed
	s.mu.Unlock()
	if done {
		return nil
	}
	if _, err := s.st.Read(indexDoneName); err == nil {
		s.mu.Lock()
		s.indexed = true
		s.mu.Unlock()
		return nil
	} else if !errors.Is(err, safefile.ErrNotExist) {
		return errors.Wrap(err, "oduflow: index state")
	}
	return s.Reindex(ctx)
}

// Dir is the claim directory.
func (s *FileClaimStore) Dir() string { return s.st.Dir() }

// files is the underlying safe store (tests write hostile records through it). It is not exported: the
// safe file store is internal to the module.
func (s *FileClaimStore) files() *safefile.Store { return s.st }

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
	data, err := encodeClaim(cp)
	if err != nil {
		return err
	}
	// Index first: an index entry without a claim (or for a claim another minion won) is harmless, a claim
	// without its index entry would hide it from the quarantine check.
	if err := s.index(cp.MinionID, cp.RequestID); err != nil {
		return err
	}
	if err := s.st.CreateExclusive(claimName(cp.RequestID), data); err != nil {
		if errors.Is(err, safefile.ErrExist) {
			return errmark.Mark(errors.Wrap(err, "oduflow: create claim"), ErrClaimExists)
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
		if errors.Is(err, safefile.ErrNotExist) {
			return nil, errmark.Mark(errors.Wrap(err, "oduflow: read claim"), ErrNoClaim)
		}
		if errors.Is(err, safefile.ErrCorrupt) { // oversized or changing under the reader
			return nil, errmark.Mark(errors.Wrap(err, "oduflow: read claim"), ErrCorruptClaim)
		}
		return nil, errors.Wrap(err, "oduflow: read claim")
	}
	c, err := decodeClaim(data)
	if err != nil {
		return nil, errmark.Mark(err, ErrCorruptClaim) // the standard library's errors.Is must see it
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
	return s.compareAndSwap(ctx, next, nil)
}

// CompareAndSwapHeld implements ClaimStore. A kernel lock cannot be lost while its holder lives, so "still held"
// is: the lease is one of this store's, not released, and its lock file is still the one in the directory.
// The check runs under the record lock, before the write.
func (s *FileClaimStore) CompareAndSwapHeld(ctx context.Context, next *Claim, held ...Lease) (*Claim, error) {
	return s.compareAndSwap(ctx, next, held)
}

func (s *FileClaimStore) checkHeld(held []Lease) error {
	for _, l := range held {
		fl, ok := l.(fileLease)
		if !ok || fl.st != s || !fl.Held() {
			return errors.WithStack(ErrLeaseLost)
		}
	}
	return nil
}

func (s *FileClaimStore) compareAndSwap(ctx context.Context, next *Claim, held []Lease) (*Claim, error) {
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
	if err := s.checkHeld(held); err != nil {
		return cur, err
	}
	out := next.clone()
	out.Generation = cur.Generation + 1
	data, err := encodeClaim(out)
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

// ListByClient implements ClaimStore: it reads the client's index, then each indexed claim. A claim that
// exists but cannot be read (unsafe or non-regular file, corrupt JSON) is an error matching
// ErrCorruptClaim that names its request id.
func (s *FileClaimStore) ListByClient(ctx context.Context, minionID string) ([]*Claim, error) {
	if err := receipt.ValidateMinionID(minionID); err != nil {
		return nil, invalid(err, "minion id")
	}
	if err := s.ensureIndexed(ctx); err != nil {
		return nil, err
	}
	cs, err := s.clientStore(minionID, false)
	if err != nil || cs == nil {
		return nil, err
	}
	names, err := cs.List("")
	if err != nil {
		return nil, errors.Wrap(err, "oduflow: list client index")
	}
	var out []*Claim
	for _, req := range names {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if receipt.ValidateRequestID(req) != nil {
			continue
		}
		c, err := s.read(req)
		if err != nil {
			if errors.Is(err, ErrNoClaim) {
				continue // indexed, but the claim was never created (or lost the race to another minion)
			}
			// Never skip it: the unreadable claim may be the client's unresolved dispatch.
			return nil, errors.WithStack(&unreadableClaimError{RequestID: req, Err: err})
		}
		if c.MinionID == minionID {
			out = append(out, c)
		}
	}
	return out, nil
}

var (
	_ ClaimStore = (*FileClaimStore)(nil)
	_ Leases     = (*FileClaimStore)(nil)
)
