package oduflow

import (
	"context"
	"iter"
	"path/filepath"
	"sync"
	"sync/atomic"
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
	openDirName    = "open"          // open/<minion id>/<request id>: the client's unresolved claims
	indexDoneName  = "index-v2.done" // present once every claim of the directory is indexed, open/ included
	claimBufMax    = 16 << 10        // read buffers larger than this are not pooled (claims are < 1 KiB)
)

// FileClaimStore keeps one claim file per request (<request id>.json, mode 0600) in a private directory
// (0700, owned by the service account) through safefile.Store: exclusive temp file, fsync, rename,
// directory fsync; opens refuse symlinks, foreign owners, group/other bits and multiply linked files.
// Create is an exclusive create (RENAME_NOREPLACE) made visible only after the client's index entry is
// durable (see Create); CompareAndSwap runs under a per-request record flock with a generation check. A
// per-client index (clients/<minion id>/<request id>, empty files) keeps ListByClient proportional to the
// client's own claims. Claims without an index entry (legacy claims copied in by an earlier runner) are
// indexed by a one-time scan the first time a store lists a client (recorded by the file index-v1.done);
// call Reindex after adding legacy claims later. It also implements Leases with kernel locks, which the
// kernel releases when a holder dies (filestore_lease.go).
// Safe for concurrent use by any number of goroutines and processes sharing the directory.
type FileClaimStore struct {
	st     *safefile.Store
	idx    *indexTree      // clients/
	open   *indexTree      // open/
	fences *safefile.Store // fences/: the per-client fencing token counters (filestore_fence.go)
	stage  func(string)    // test hook: crash points of Create; nil in production

	mu      sync.Mutex
	owners  map[string]string // request id -> minion id (immutable once created)
	indexed bool

	leases leasePool // request locks and client leases (filestore_lease.go)

	bufs sync.Pool // *[]byte read buffers: a claim read allocates no file buffer (decodeClaim keeps none of it)

	clock   hostClock       // this host's boot id and CLOCK_BOOTTIME: the status windows (filestore_statuswindows.go)
	windows [2]atomic.Int64 // launch grace, status expiry (nanoseconds; 0: the defaults)
}

// OpenFileClaimStore opens (creating it 0700 when missing) the claim directory.
func OpenFileClaimStore(dir string) (_ *FileClaimStore, err error) {
	defer errmark.Boundary(&err)
	return openFileClaimStore(dir, nil)
}

// openFileClaimStore is OpenFileClaimStore with a test hook called at the crash points of Create (the
// store's own and the safe file store's).
func openFileClaimStore(dir string, stage func(string)) (*FileClaimStore, error) {
	opts := []safefile.StoreOption{safefile.WithCreate()}
	if stage != nil {
		opts = append(opts, safefile.WithStageHook(stage))
	}
	st, err := safefile.OpenStore(dir, opts...)
	if err != nil {
		return nil, errors.Wrap(err, "oduflow: open claim directory")
	}
	idx, err := safefile.OpenStore(filepath.Join(st.Dir(), indexDirName), opts...)
	if err != nil {
		return nil, errors.Wrap(err, "oduflow: open claim index directory")
	}
	open, err := safefile.OpenStore(filepath.Join(st.Dir(), openDirName), opts...)
	if err != nil {
		return nil, errors.Wrap(err, "oduflow: open unresolved index directory")
	}
	fences, err := safefile.OpenStore(filepath.Join(st.Dir(), fenceDirName), opts...)
	if err != nil {
		return nil, errors.Wrap(err, "oduflow: open fence token directory")
	}
	return &FileClaimStore{st: st, idx: newIndexTree(idx), open: newIndexTree(open), fences: fences, stage: stage,
		owners: make(map[string]string)}, nil
}

func (s *FileClaimStore) at(stage string) {
	if s.stage != nil {
		s.stage(stage)
	}
}

// Dir is the claim directory.
func (s *FileClaimStore) Dir() string { return s.st.Dir() }

// files is the underlying safe store (tests write hostile records through it). It is not exported: the
// safe file store is internal to the module.
func (s *FileClaimStore) files() *safefile.Store { return s.st }

func claimName(requestID string) string { return requestID + claimSuffix }

// Create implements ClaimStore. The claim's name appears only once its index entry is durable, and it is
// durable itself when Create returns; the steps, and why a crash between any two of them is harmless:
//
//  1. the client's index directory (made when missing) and the empty entry clients/<minion>/<request>
//     are created, not yet synced, while (concurrently) the claim is written to an exclusive temporary
//     file;
//  2. three fsyncs run concurrently and Create waits for all of them: the temporary file's, the client
//     index directory's (the entry) and, the first time this store uses the client, clients/'s (the
//     client's directory entry). That is one wait, not three in a row (with a journal one commit; without
//     one the block layer merges their device cache flushes);
//  3. only when all succeeded is the temporary file renamed to <request>.json (RENAME_NOREPLACE: the
//     exclusive create) and the claim directory fsynced, group-committed with concurrent Creates.
//
// A crash before 3 leaves no claim: at most an index entry without a claim (ListByClient skips it, a new
// Create of the request reuses it) and a stray temporary file (never listed or read). A claim name can
// exist, on disk or after power loss, only if step 2 completed, so every claim has its index entry and the
// quarantine check, which reads only the client's index, cannot miss it. A crash during 3 leaves the claim
// or not; a claim whose rename was not yet durable can vanish only together with the Start that wrote it,
// which had not returned (no worker ran). The worker starts after Create returns, so after step 3.
func (s *FileClaimStore) Create(ctx context.Context, c *Claim) (err error) {
	defer errmark.Boundary(&err)
	if err := ctx.Err(); err != nil {
		return err
	}
	cp := c.clone()
	cp.Generation = 1
	if cp.CreatedClock == "" || (cp.DispatchedAt != nil && cp.DispatchedClock == "") {
		// The launch window opens now, on this host's monotonic clock (and the dispatch window of a claim
		// created past its intent: one copied in from another store).
		now, err := s.clock.now()
		if err != nil {
			return errmark.Mark(err, ErrClaimStore)
		}
		if cp.CreatedClock == "" {
			cp.CreatedClock = now.String()
		}
		if cp.DispatchedAt != nil && cp.DispatchedClock == "" {
			cp.DispatchedClock = now.String()
		}
	}
	if err := cp.Validate(); err != nil {
		return err
	}
	data, err := encodeClaim(cp)
	if err != nil {
		return err
	}
	// A worker must be able to lock the claim: a lease pool replaced and not reopenable fails the Start
	// now, before anything is written (filestore_lease.go).
	if err := s.checkPool(); err != nil {
		return err
	}
	index := func() (func() error, error) {
		return s.stageIndex(cp.MinionID, cp.RequestID, cp.Unresolved())
	}
	if err := s.st.CreateExclusiveAfter(claimName(cp.RequestID), data, index); err != nil {
		if errors.Is(err, safefile.ErrExist) {
			return errmark.Mark(errors.Wrap(err, "oduflow: create claim"), ErrClaimExists)
		}
		return storageErr(errors.Wrap(err, "oduflow: create claim"))
	}
	c.Generation, c.CreatedClock, c.DispatchedClock = 1, cp.CreatedClock, cp.DispatchedClock
	s.remember(cp)
	return nil
}

// Get implements ClaimStore.
func (s *FileClaimStore) Get(ctx context.Context, requestID string) (_ *Claim, err error) {
	defer errmark.Boundary(&err)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := receipt.ValidateRequestID(requestID); err != nil {
		return nil, invalid(err, "request id")
	}
	return s.read(requestID)
}

func (s *FileClaimStore) read(requestID string) (*Claim, error) {
	bp, _ := s.bufs.Get().(*[]byte)
	if bp == nil {
		bp = new([]byte)
	}
	defer s.bufs.Put(bp)
	data, err := s.st.ReadInto(claimName(requestID), *bp)
	if cap(data) <= claimBufMax {
		*bp = data[:0] // keep a grown buffer for the next read, unless an outsized record grew it
	}
	if err != nil {
		if errors.Is(err, safefile.ErrNotExist) {
			// The answer to "which request?" is the id, not the store's file layout: the message may
			// travel to a service's caller.
			return nil, errors.Wrapf(ErrNoClaim, "request %s", errors.Safe(requestID))
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
func (s *FileClaimStore) CompareAndSwap(ctx context.Context, next *Claim) (_ *Claim, err error) {
	defer errmark.Boundary(&err)
	return s.compareAndSwap(ctx, next, nil)
}

// CompareAndSwapHeld implements ClaimStore. A kernel lock cannot be lost while its holder lives, so "still held"
// is: the lease is one of this store's, not released, and its lock file is still the one in the directory.
// The check runs under the record lock, before the write.
func (s *FileClaimStore) CompareAndSwapHeld(ctx context.Context, next *Claim, held ...Lease) (_ *Claim, err error) {
	defer errmark.Boundary(&err)
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
		return nil, storageErr(errors.Wrap(err, "oduflow: claim record lock"))
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
	if cur.DispatchedAt == nil && out.DispatchedAt != nil {
		// The dispatch intent: the dispatch window opens now, on this host's monotonic clock.
		now, err := s.clock.now()
		if err != nil {
			return nil, errmark.Mark(err, ErrClaimStore)
		}
		out.DispatchedClock = now.String()
	}
	out.FenceToken = cur.FenceToken // issued once, never changed
	var fence *fenceIssue
	if held != nil && cur.Phase == PhaseClaimed && out.Phase == PhaseDispatching {
		// The dispatch intent: the client's next fencing token, above the floor the caller passed in
		// next.FenceToken, durable before the claim holding it (filestore_fence.go).
		if fence, err = s.stageFenceToken(ctx, out.MinionID, next.FenceToken); err != nil {
			return nil, err
		}
		defer fence.release()
		out.FenceToken = fence.token
	}
	data, err := encodeClaim(out)
	if err != nil {
		return nil, err
	}
	if out.Unresolved() && !cur.Unresolved() {
		if err := s.openEntry(out.MinionID, out.RequestID); err != nil { // durable before the claim says so
			return nil, storageErr(err)
		}
	}
	var prior safefile.Prior
	if fence != nil {
		prior = fence.prior
	}
	if err := s.st.WriteAtomicAfter(claimName(out.RequestID), data, prior); err != nil {
		return nil, storageErr(errors.Wrap(err, "oduflow: write claim"))
	}
	if fence != nil {
		fence.done()
	}
	if len(held) > 0 {
		// The leases were checked before the rename; checked again after it, they were held when the
		// record became visible: a pool replaced in between (which would let a process holding the same
		// client lease through the new pool file list this client before the write) makes the check fail.
		// Then the caller publishes nothing; the intent it wrote quarantines the client until reconciled.
		if err := s.checkHeld(held); err != nil {
			return out, errors.Wrap(err, "oduflow: lease lost while the intent was written; nothing may be published")
		}
	}
	if !out.Unresolved() && cur.Unresolved() {
		_ = s.closeEntry(out.MinionID, out.RequestID) // a stale entry only costs a read
	}
	return out, nil
}

// storageErr marks a write the file system refused for lack of room or permission to write (ENOSPC,
// EDQUOT, EROFS) with ErrClaimStore: nothing was written (the safe file store removes its temporary
// file), and the CLI reports the store, not the request, as failed.
func storageErr(err error) error {
	if safefile.StorageRefused(err) {
		return errmark.Mark(err, ErrClaimStore)
	}
	return err
}

func sameIdentity(a, b *Claim) bool {
	return a.MinionID == b.MinionID && a.RequestID == b.RequestID && a.Profile == b.Profile &&
		a.Role == b.Role && a.StateDigest == b.StateDigest && a.JID == b.JID && a.PayloadRef == b.PayloadRef &&
		a.CreatedAt.Equal(b.CreatedAt) && a.Protocol == b.Protocol && a.CreatedClock == b.CreatedClock
}

// ListByClient implements ClaimStore: it reads the client's index, then each indexed claim. A claim that
// exists but cannot be read (unsafe or non-regular file, corrupt JSON) is an error matching
// ErrCorruptClaim that names its request id.
func (s *FileClaimStore) ListByClient(ctx context.Context, minionID string) (_ []*Claim, err error) {
	defer errmark.Boundary(&err)
	if err := receipt.ValidateMinionID(minionID); err != nil {
		return nil, invalid(err, "minion id")
	}
	if err := s.ensureIndexed(ctx); err != nil {
		return nil, err
	}
	return s.listIndexed(ctx, s.idx, minionID)
}

// ListUnresolved implements UnresolvedLister: the claims of the client's open entries (see
// filestore_index.go). It may return resolved claims too (an entry a crash left behind).
func (s *FileClaimStore) ListUnresolved(ctx context.Context, minionID string) (_ []*Claim, err error) {
	defer errmark.Boundary(&err)
	if err := receipt.ValidateMinionID(minionID); err != nil {
		return nil, invalid(err, "minion id")
	}
	if err := s.ensureIndexed(ctx); err != nil {
		return nil, err
	}
	return s.listIndexed(ctx, s.open, minionID)
}

// ScanUnresolved implements UnresolvedScanner: the open entries of every client (open/<minion id>/),
// one client's claims at a time. It may yield resolved claims too (an entry a crash left behind).
func (s *FileClaimStore) ScanUnresolved(ctx context.Context) iter.Seq2[*Claim, error] {
	return func(yield func(*Claim, error) bool) {
		if err := s.ensureIndexed(ctx); err != nil {
			yield(nil, err)
			return
		}
		minions, err := s.open.root.List("")
		if err != nil {
			yield(nil, errmark.Mark(errors.Wrap(err, "oduflow: list the unresolved index"), ErrClaimStore))
			return
		}
		for _, m := range minions {
			if receipt.ValidateMinionID(m) != nil {
				continue // not a client's directory
			}
			cs, err := s.listIndexed(ctx, s.open, m)
			if err != nil {
				yield(nil, err)
				return
			}
			for _, c := range cs {
				if !yield(c, nil) {
					return
				}
			}
		}
	}
}

// listIndexed reads the claims named by the client's directory of t.
func (s *FileClaimStore) listIndexed(ctx context.Context, t *indexTree, minionID string) ([]*Claim, error) {
	ci, err := t.dir(minionID, false)
	if err != nil || ci == nil {
		return nil, err
	}
	names, err := ci.st.List("")
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
	_ ClaimStore        = (*FileClaimStore)(nil)
	_ Leases            = (*FileClaimStore)(nil)
	_ UnresolvedLister  = (*FileClaimStore)(nil)
	_ UnresolvedScanner = (*FileClaimStore)(nil)
)
