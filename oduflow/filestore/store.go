package filestore

import (
	"context"
	"io/fs"
	"iter"
	"path/filepath"
	"sync"
	"time"

	"github.com/cockroachdb/errors"

	"github.com/oduflow/oduflow-go/internal/errmark"
	"github.com/oduflow/oduflow-go/internal/filestorehook"
	"github.com/oduflow/oduflow-go/internal/hostclock"
	"github.com/oduflow/oduflow-go/internal/safefile"
	"github.com/oduflow/oduflow-go/oduflow/claims"
	"github.com/oduflow/oduflow-go/receipt"
)

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

// Store keeps one claim file per request (<request id>.json, mode 0600) in a private directory
// (0700, owned by the service account) through safefile.Store: exclusive temp file, fsync, rename,
// directory fsync; opens refuse symlinks, foreign owners, group/other bits and multiply linked files.
// Create is an exclusive create (RENAME_NOREPLACE) made visible only after the client's index entry is
// durable (see Create); CompareAndSwap runs under a per-request record flock with a generation check. A
// per-client index (clients/<minion id>/<request id>, empty files) keeps ListByClient proportional to the
// client's own claims. Claims without an index entry (legacy claims copied in by an earlier runner) are
// indexed by a one-time scan the first time a store lists a client (recorded by the file index-v1.done);
// call Reindex after adding legacy claims later. It also implements claims.Leases with kernel locks, which
// the kernel releases when a holder dies (lease.go).
// Safe for concurrent use by any number of goroutines and processes sharing the directory.
type Store struct {
	st     *safefile.Store
	idx    *indexTree      // clients/
	open   *indexTree      // open/
	fences *safefile.Store // fences/: the per-client fencing token counters (fence.go)
	stage  func(string)    // test hook: crash points of Create; nil in production

	mu      sync.Mutex
	owners  map[string]string // request id -> minion id (immutable once created)
	indexed bool

	leases leasePool // request locks and client leases (lease.go)

	bufs sync.Pool // *[]byte read buffers: a claim read allocates no file buffer (claims.Decode keeps none of it)

	clock         *hostclock.Clock // this host's boot id and CLOCK_BOOTTIME: the status windows (statuswindows.go)
	grace, expiry time.Duration    // the status windows (WithStatusWindows), fixed at Open
}

// Option configures Open and OpenExisting. Callers get options from this package's With* functions
// only: the function's argument is a type internal to the module, which nothing outside it can name, so
// the module's own tests can set their hooks (crash points, a host clock they move) through the same
// parameter without the hooks being part of the store's API.
type Option func(*filestorehook.Config)

// WithStatusWindows sets the launch grace and the status expiry the store's status windows last (the
// Timers.LaunchGrace and StatusExpiry of every Dispatcher on the store: oduflow.New refuses a store whose
// windows differ from its Timers). Without it: oduflow.DefaultTimers' (30 s and 7260 s). Both must be
// positive (else Open fails with claims.ErrInvalidInput).
func WithStatusWindows(launchGrace, statusExpiry time.Duration) Option {
	return func(c *filestorehook.Config) { c.LaunchGrace, c.StatusExpiry = launchGrace, statusExpiry }
}

// Open opens (creating it 0700 when missing) the claim directory.
func Open(dir string, opts ...Option) (_ *Store, err error) {
	defer errmark.Boundary(&err)
	return open(dir, true, opts)
}

// ErrNoStore: OpenExisting found no claim directory at the path it was given. Nothing was created: a
// mistyped path must not look like an empty store, in which every request would read not_started.
var ErrNoStore = errors.New("filestore: no claim directory")

// OpenExisting opens a claim directory that must exist already, for readers (a status query, a
// listing, a reconciliation): a missing directory is ErrNoStore (it also matches fs.ErrNotExist) and
// nothing is created. The store's own subdirectories are still made inside an existing directory (a
// store of an earlier layout gets its indexes), since they are part of the store, not a new one.
func OpenExisting(dir string, opts ...Option) (_ *Store, err error) {
	defer errmark.Boundary(&err)
	return open(dir, false, opts)
}

// open opens the store at dir with opts applied (create: the directory is made when missing, else a
// missing directory is ErrNoStore).
func open(dir string, create bool, opts []Option) (*Store, error) {
	var h filestorehook.Config
	for _, o := range opts {
		if o != nil {
			o(&h)
		}
	}
	if h.LaunchGrace == 0 && h.StatusExpiry == 0 {
		h.LaunchGrace, h.StatusExpiry = defaultLaunchGrace, defaultStatusExpiry
	}
	if h.LaunchGrace <= 0 || h.StatusExpiry <= 0 {
		return nil, errmark.Mark(errors.Newf("filestore: status windows must be positive (launch grace %s, status expiry %s)",
			h.LaunchGrace, h.StatusExpiry), claims.ErrInvalidInput)
	}
	if create {
		return openHooked(dir, h)
	}
	if _, err := safefile.OpenStore(dir); err != nil {
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, safefile.ErrNotExist) {
			return nil, errors.Mark(errors.Wrapf(ErrNoStore, "claim directory %s does not exist (check the path: a reader never creates a claim store)", errors.Safe(dir)), fs.ErrNotExist)
		}
		return nil, errors.Wrap(err, "oduflow: open claim directory")
	}
	return openHooked(dir, h)
}

// openHooked opens the store with its configuration: the windows, a hook called at the crash points of
// Create (the store's own and the safe file store's) and the host clock.
func openHooked(dir string, h filestorehook.Config) (*Store, error) {
	// The four stores share one group commit of their fsyncs (safefile.SyncGroup): concurrent Creates,
	// intents and terminal commits of this process share a file-system sync instead of each waiting for
	// its own journal commit.
	opts := []safefile.StoreOption{safefile.WithCreate(), safefile.WithSyncGroup(safefile.NewSyncGroup())}
	if h.Stage != nil {
		opts = append(opts, safefile.WithStageHook(h.Stage))
	}
	if h.Clock == nil {
		h.Clock = new(hostclock.Clock)
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
	return &Store{st: st, idx: newIndexTree(idx), open: newIndexTree(open), fences: fences, stage: h.Stage,
		owners: make(map[string]string), clock: h.Clock, grace: h.LaunchGrace, expiry: h.StatusExpiry}, nil
}

func (s *Store) at(stage string) {
	if s.stage != nil {
		s.stage(stage)
	}
}

// Dir is the claim directory.
func (s *Store) Dir() string { return s.st.Dir() }

// files is the underlying safe store (tests write hostile records through it). It is not exported: the
// safe file store is internal to the module.
func (s *Store) files() *safefile.Store { return s.st }

func claimName(requestID string) string { return requestID + claimSuffix }

// Create implements ClaimStore. The claim's name appears only once its index entry is durable, and it is
// durable itself when Create returns; the steps, and why a crash between any two of them is harmless:
//
//  1. the client's index directory (made when missing) and the empty entry clients/<minion>/<request>
//     are created, not yet synced, while (concurrently) the claim is written to an exclusive temporary
//     file;
//  2. three fsyncs run concurrently and Create waits for all of them: the temporary file's, the client
//     index directory's (the entry) and, the first time this store uses the client, clients/'s (the
//     client's directory entry). That is one wait, not three in a row: the three, and every other writer's
//     fsync queued with them, are one syncfs of the file system (the store's group commit);
//  3. only when all succeeded is the temporary file renamed to <request>.json (RENAME_NOREPLACE: the
//     exclusive create) and the claim directory fsynced, group-committed with concurrent Creates.
//
// A crash before 3 leaves no claim: at most an index entry without a claim (ListByClient skips it, a new
// Create of the request reuses it) and a stray temporary file (never listed or read). A claim name can
// exist, on disk or after power loss, only if step 2 completed, so every claim has its index entry and the
// quarantine check, which reads only the client's index, cannot miss it. A crash during 3 leaves the claim
// or not; a claim whose rename was not yet durable can vanish only together with the Start that wrote it,
// which had not returned (no worker ran). The worker starts after Create returns, so after step 3.
func (s *Store) Create(ctx context.Context, c *claims.Claim) (err error) {
	defer errmark.Boundary(&err)
	if err := ctx.Err(); err != nil {
		return err
	}
	cp := c.Clone()
	cp.Generation = 1
	if cp.CreatedClock == "" || (cp.DispatchedAt != nil && cp.DispatchedClock == "") {
		// The launch window opens now, on this host's monotonic clock (and the dispatch window of a claim
		// created past its intent: one copied in from another store).
		now, err := s.clock.Now()
		if err != nil {
			return errmark.Mark(err, claims.ErrClaimStore)
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
	data, err := cp.MarshalBinary()
	if err != nil {
		return err
	}
	// A worker must be able to lock the claim: a lease pool replaced and not reopenable fails the Start
	// now, before anything is written (lease.go).
	if err := s.checkPool(); err != nil {
		return err
	}
	index := func() (func() error, error) {
		return s.stageIndex(cp.MinionID, cp.RequestID, cp.Unresolved())
	}
	if err := s.st.CreateExclusiveAfter(claimName(cp.RequestID), data, index); err != nil {
		if errors.Is(err, safefile.ErrExist) {
			return errmark.Mark(errors.Wrap(err, "oduflow: create claim"), claims.ErrClaimExists)
		}
		return storageErr(errors.Wrap(err, "oduflow: create claim"))
	}
	c.Generation, c.CreatedClock, c.DispatchedClock = 1, cp.CreatedClock, cp.DispatchedClock
	s.remember(cp)
	return nil
}

// Get implements ClaimStore.
func (s *Store) Get(ctx context.Context, requestID string) (_ *claims.Claim, err error) {
	defer errmark.Boundary(&err)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := receipt.ValidateRequestID(requestID); err != nil {
		return nil, invalid(err, "request id")
	}
	return s.read(requestID)
}

func (s *Store) read(requestID string) (*claims.Claim, error) {
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
			return nil, errors.Wrapf(claims.ErrNoClaim, "request %s", errors.Safe(requestID))
		}
		if errors.Is(err, safefile.ErrCorrupt) { // oversized or changing under the reader
			return nil, errmark.Mark(errors.Wrap(err, "oduflow: read claim"), claims.ErrCorruptClaim)
		}
		return nil, errors.Wrap(err, "oduflow: read claim")
	}
	c, err := claims.Decode(data)
	if err != nil {
		return nil, errmark.Mark(err, claims.ErrCorruptClaim) // the standard library's errors.Is must see it
	}
	if c.RequestID != requestID {
		return nil, errors.Wrap(claims.ErrCorruptClaim, "claim file holds another request")
	}
	s.remember(c)
	return c, nil
}

func (s *Store) remember(c *claims.Claim) {
	s.mu.Lock()
	s.owners[c.RequestID] = c.MinionID
	s.mu.Unlock()
}

// CompareAndSwap implements ClaimStore.
func (s *Store) CompareAndSwap(ctx context.Context, next *claims.Claim) (_ *claims.Claim, err error) {
	defer errmark.Boundary(&err)
	return s.compareAndSwap(ctx, next, nil)
}

// CompareAndSwapHeld implements ClaimStore. A kernel lock cannot be lost while its holder lives, so "still held"
// is: the lease is one of this store's, not released, and its lock file is still the one in the directory.
// The check runs under the record lock, before the write.
func (s *Store) CompareAndSwapHeld(ctx context.Context, next *claims.Claim, held ...claims.Lease) (_ *claims.Claim, err error) {
	defer errmark.Boundary(&err)
	return s.compareAndSwap(ctx, next, held)
}

func (s *Store) checkHeld(held []claims.Lease) error {
	for _, l := range held {
		fl, ok := l.(fileLease)
		if !ok || fl.st != s || !fl.Held() {
			return errors.WithStack(claims.ErrLeaseLost)
		}
	}
	return nil
}

func (s *Store) compareAndSwap(ctx context.Context, next *claims.Claim, held []claims.Lease) (*claims.Claim, error) {
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
		return cur, errors.Wrapf(claims.ErrConflict, "generation %d, expected %d",
			errors.Safe(cur.Generation), errors.Safe(next.Generation))
	}
	if !sameIdentity(cur, next) {
		return cur, errors.Wrap(claims.ErrConflict, "identity fields are immutable")
	}
	if err := s.checkHeld(held); err != nil {
		return cur, err
	}
	out := next.Clone()
	out.Generation = cur.Generation + 1
	if cur.DispatchedAt == nil && out.DispatchedAt != nil {
		// The dispatch intent: the dispatch window opens now, on this host's monotonic clock.
		now, err := s.clock.Now()
		if err != nil {
			return nil, errmark.Mark(err, claims.ErrClaimStore)
		}
		out.DispatchedClock = now.String()
	}
	out.FenceToken = cur.FenceToken // issued once, never changed
	var fence *fenceIssue
	if held != nil && cur.Phase == claims.PhaseClaimed && out.Phase == claims.PhaseDispatching {
		// The dispatch intent: the client's next fencing token, above the floor the caller passed in
		// next.FenceToken, durable before the claim holding it (fence.go).
		if fence, err = s.stageFenceToken(ctx, out.MinionID, next.FenceToken); err != nil {
			return nil, err
		}
		defer fence.release()
		out.FenceToken = fence.token
	}
	data, err := out.MarshalBinary()
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

// unreadableClaimError: ListByClient (or ListUnresolved, Reindex) found a claim of the client it cannot
// read (unsafe file, FIFO, corrupt or duplicate-key JSON, ...). It is ErrCorruptClaim for errors.Is and
// keeps the cause reachable; RequestID names the claim (an identifier, not a secret), and
// UnreadableRequestID tells the dispatcher which claim to log (claims.ClaimStore). A client whose claims
// cannot all be read cannot be proven clear, so the dispatcher refuses to dispatch to it
// (claim_store_unreadable) and logs the request id; it never reads the unreadable claim as "quarantined".
type unreadableClaimError struct {
	RequestID string
	Err       error
}

func (e *unreadableClaimError) Error() string {
	return "oduflow: unreadable claim " + e.RequestID + ": " + e.Err.Error()
}

// Unwrap makes errors.Is(err, ErrCorruptClaim) true and keeps the cause (e.g. safefile.ErrNotRegular) visible.
func (e *unreadableClaimError) Unwrap() []error { return []error{e.Err, claims.ErrCorruptClaim} }

// UnreadableRequestID names the unreadable claim (the contract's way, matched by behaviour).
func (e *unreadableClaimError) UnreadableRequestID() string { return e.RequestID }

// SafeFormatError prints the request id (an identifier) and the cause's own redaction-safe form.
func (e *unreadableClaimError) SafeFormatError(p errors.Printer) (next error) {
	p.Printf("oduflow: unreadable claim %s", errors.Safe(e.RequestID))
	return e.Err
}

// invalid marks a malformed id argument with claims.ErrInvalidInput (the dispatcher's own helper, for the
// store's arguments).
func invalid(err error, what string) error {
	return errmark.Mark(errors.Wrapf(err, "oduflow: invalid %s", errors.Safe(what)), claims.ErrInvalidInput)
}

// storageErr marks a write the file system refused for lack of room or permission to write (ENOSPC,
// EDQUOT, EROFS) with claims.ErrClaimStore: nothing was written (the safe file store removes its temporary
// file), and the CLI reports the store, not the request, as failed.
func storageErr(err error) error {
	if safefile.StorageRefused(err) {
		return errmark.Mark(err, claims.ErrClaimStore)
	}
	return err
}

func sameIdentity(a, b *claims.Claim) bool {
	return a.MinionID == b.MinionID && a.RequestID == b.RequestID && a.Profile == b.Profile &&
		a.Role == b.Role && a.StateDigest == b.StateDigest && a.JID == b.JID && a.PayloadRef == b.PayloadRef &&
		a.CreatedAt.Equal(b.CreatedAt) && a.Protocol == b.Protocol && a.CreatedClock == b.CreatedClock
}

// ListByClient implements ClaimStore: it reads the client's index, then each indexed claim. A claim that
// exists but cannot be read (unsafe or non-regular file, corrupt JSON) is an error matching
// claims.ErrCorruptClaim that names its request id.
func (s *Store) ListByClient(ctx context.Context, minionID string) (_ []*claims.Claim, err error) {
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
// index.go). It may return resolved claims too (an entry a crash left behind).
func (s *Store) ListUnresolved(ctx context.Context, minionID string) (_ []*claims.Claim, err error) {
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
func (s *Store) ScanUnresolved(ctx context.Context) iter.Seq2[*claims.Claim, error] {
	return func(yield func(*claims.Claim, error) bool) {
		if err := s.ensureIndexed(ctx); err != nil {
			yield(nil, err)
			return
		}
		minions, err := s.open.root.List("")
		if err != nil {
			yield(nil, errmark.Mark(errors.Wrap(err, "oduflow: list the unresolved index"), claims.ErrClaimStore))
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
func (s *Store) listIndexed(ctx context.Context, t *indexTree, minionID string) ([]*claims.Claim, error) {
	ci, err := t.dir(minionID, false)
	if err != nil || ci == nil {
		return nil, err
	}
	names, err := ci.st.List("")
	if err != nil {
		return nil, errors.Wrap(err, "oduflow: list client index")
	}
	var out []*claims.Claim
	for _, req := range names {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if receipt.ValidateRequestID(req) != nil {
			continue
		}
		c, err := s.read(req)
		if err != nil {
			if errors.Is(err, claims.ErrNoClaim) {
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
	_ claims.ClaimStore        = (*Store)(nil)
	_ claims.Leases            = (*Store)(nil)
	_ claims.UnresolvedLister  = (*Store)(nil)
	_ claims.UnresolvedScanner = (*Store)(nil)
)
