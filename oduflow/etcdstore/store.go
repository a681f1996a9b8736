package etcdstore

import (
	"context"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/google/uuid"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/oduflow/oduflow-go/internal/errmark"
	"github.com/oduflow/oduflow-go/oduflow/claims"
	"github.com/oduflow/oduflow-go/receipt"
)

// Key layout under the prefix (request and minion ids are canonical UUID forms, so no id holds a "/"):
//
//	PREFIX/claims/<request id>            the claim ((*claims.Claim).MarshalBinary JSON)
//	PREFIX/clients/<minion id>/<request>  empty index entry, written in the claim's creating transaction;
//	                                      never deleted: it is the tombstone that keeps a request id used
//	PREFIX/open/<minion id>/<request>     empty entry while the claim is unresolved (unresolved.go)
//	PREFIX/meta/open-index-v1             present once every claim's open entry exists (unresolved.go)
//	PREFIX/locks/run/<request id>         the request lock, attached to an etcd lease
//	PREFIX/locks/client/<minion id>       the per-client execution lease, attached to an etcd lease
//	PREFIX/windows/launch/<request id>    the launch window, on an etcd lease nobody renews (statuswindows.go)
//	PREFIX/windows/dispatch/<request id>  the dispatch window, on an etcd lease nobody renews (statuswindows.go)
const (
	claimsDir      = "/claims/"
	clientsDir     = "/clients/"
	runLocksDir    = "/locks/run/"
	clientLocksDir = "/locks/client/"
	// listBatch is how many claims one read transaction of a listing fetches (etcd's default
	// --max-txn-ops is 128); its answer is at most claimAnswerCap(listBatch), about 1 MiB.
	listBatch = 64
)

// Store is an etcd-backed claims.ClaimStore and claims.Leases. Several Stores (controller replicas,
// each with its own client) sharing a cluster and a prefix share claims and locks. Safe for concurrent
// use. Close releases the client.
type Store struct {
	cli        *clientv3.Client
	prefix     string
	ttl        int64 // seconds
	reqTimeout time.Duration
	holder     string        // informational value of the lock keys: which Store holds them
	kv         pb.KVClient   // the client's KV service, for reads with a bounded answer (read.go)
	rev        revisionGuard // high-water mark of the cluster revision (revision.go)
	openIndex  atomic.Bool   // the open-index migration marker was seen (unresolved.go)
	openMu     sync.Mutex    // one open-index scan at a time
	windows    windowLeases  // the leases of the status windows' keys (statuswindows.go)
	bases      fenceBases    // the clients' fence bases as last seen (fence.go)

	ctx    context.Context // lifetime of the Store: the keepalives of its etcd leases
	cancel context.CancelFunc
}

// Open connects to the cluster and checks that it answers (and that the credentials may read under the
// prefix) within the dial timeout.
func Open(ctx context.Context, opts ...Option) (_ *Store, err error) {
	defer errmark.Boundary(&err)
	cfg := config{prefix: DefaultPrefix, ttl: DefaultTTL, dialTimeout: DefaultDialTimeout,
		reqTimeout: DefaultRequestTimeout, grace: defaultLaunchGrace, expiry: defaultStatusExpiry}
	for _, o := range opts {
		o(&cfg)
	}
	if len(cfg.endpoints) == 0 {
		return nil, errmark.Mark(errors.New("etcdstore: no endpoint"), claims.ErrInvalidInput)
	}
	if !validPrefix(cfg.prefix) {
		return nil, errmark.Mark(errors.New("etcdstore: prefix must be absolute printable ASCII without empty segments"),
			claims.ErrInvalidInput)
	}
	if cfg.ttl <= 0 || cfg.dialTimeout <= 0 || cfg.reqTimeout <= 0 || cfg.grace <= 0 || cfg.expiry <= 0 {
		return nil, errmark.Mark(errors.New("etcdstore: TTL, timeouts and status windows must be positive"), claims.ErrInvalidInput)
	}
	tcfg, err := cfg.tlsConfig()
	if err != nil {
		return nil, err
	}
	if cfg.logger == nil {
		cfg.logger = zap.NewNop()
	}
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	cli, err := clientv3.New(clientv3.Config{Endpoints: cfg.endpoints, DialTimeout: cfg.dialTimeout, TLS: tcfg,
		Username: cfg.username, Password: cfg.password, Logger: cfg.logger, Context: sctx})
	if err != nil {
		cancel()
		return nil, errors.Wrap(err, "etcdstore: connect") // the client's error never holds the password
	}
	s := &Store{cli: cli, prefix: cfg.prefix, ttl: int64(math.Ceil(cfg.ttl.Seconds())), reqTimeout: cfg.reqTimeout,
		holder: "oduflow-etcdstore/" + uuid.NewString(), kv: pb.NewKVClient(cli.ActiveConnection()), ctx: sctx,
		cancel: cancel, windows: windowLeases{grace: cfg.grace, expiry: cfg.expiry}}
	pctx, pcancel := context.WithTimeout(ctx, cfg.dialTimeout)
	defer pcancel()
	resp, err := cli.Get(pctx, s.prefix+"/", clientv3.WithCountOnly())
	if err != nil {
		_ = s.Close()
		return nil, readErr(err, "probe cluster")
	}
	_ = s.rev.observe(resp.Header, 0)
	if err := s.markFreshOpenIndex(pctx); err != nil {
		_ = s.Close()
		return nil, err
	}
	return s, nil
}

// Close stops the keepalives of every lock still held (their etcd leases then expire within the TTL)
// and closes the client.
func (s *Store) Close() (err error) {
	defer errmark.Boundary(&err)
	s.cancel()
	return errors.Wrap(s.cli.Close(), "etcdstore: close")
}

// Client exposes the etcd client (tests, tooling).
func (s *Store) Client() *clientv3.Client { return s.cli }

// Prefix is the key prefix of the store's records.
func (s *Store) Prefix() string { return s.prefix }

func (s *Store) claimKey(request string) string { return s.prefix + claimsDir + request }
func (s *Store) indexPrefix(minion string) string {
	return s.prefix + clientsDir + minion + "/"
}

func invalidID(err error, what string) error {
	return errmark.Mark(errors.Wrapf(err, "etcdstore: invalid %s", errors.Safe(what)), claims.ErrInvalidInput)
}

// Create implements claims.ClaimStore: one transaction If(CreateRevision(claim) == 0,
// CreateRevision(index entry) == 0) Then(Put claim, Put index entry, Put open entry). The index entry is
// never deleted, so a request id whose claim was deleted (by hand, or by a tool) is never created again:
// that Create fails with ErrCorruptClaim instead of starting the request a second time under a new JID.
// Its error matches ErrOutcomeUnknown when the acknowledgement was lost.
func (s *Store) Create(ctx context.Context, c *claims.Claim) (err error) {
	defer errmark.Boundary(&err)
	if err := ctx.Err(); err != nil {
		return err
	}
	cp := cloneClaim(c)
	cp.Generation = 1
	if err := cp.Validate(); err != nil {
		return errmark.Mark(err, claims.ErrInvalidInput)
	}
	data, err := cp.MarshalBinary()
	if err != nil {
		return err
	}
	key, idx := s.claimKey(cp.RequestID), s.indexPrefix(cp.MinionID)+cp.RequestID
	// The launch window opens with the claim, on a lease the cluster expires LaunchGrace later.
	launch, err := s.windowLease(ctx, s.launchGrace())
	if err != nil {
		return err
	}
	puts := []clientv3.Op{clientv3.OpPut(key, string(data)), clientv3.OpPut(idx, ""),
		clientv3.OpPut(s.launchWindowKey(cp.RequestID), "", clientv3.WithLease(launch))}
	if cp.Unresolved() { // a claim migrated in final is not
		puts = append(puts, clientv3.OpPut(s.openKey(cp.MinionID, cp.RequestID), ""))
	}
	floor := s.rev.floor()
	resp, err := s.cli.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0), clientv3.Compare(clientv3.CreateRevision(idx), "=", 0)).
		Then(puts...).
		Else(clientv3.OpGet(key, clientv3.WithCountOnly())).
		Commit()
	if err != nil {
		if errors.Is(err, rpctypes.ErrLeaseNotFound) {
			s.forgetWindowLease(launch) // nothing written; the next Create grants a fresh one
		}
		return writeErr(err, "create claim")
	}
	if err := s.rev.observe(resp.Header, floor); err != nil {
		return err
	}
	if !resp.Succeeded {
		if resp.Responses[0].GetResponseRange().GetCount() == 0 {
			return corrupt("claim deleted while its index entry remains: the request id was used")
		}
		return errors.Wrap(claims.ErrClaimExists, "etcdstore: create claim")
	}
	c.Generation = 1
	return nil
}

// Get implements claims.ClaimStore (a linearizable read).
func (s *Store) Get(ctx context.Context, requestID string) (_ *claims.Claim, err error) {
	defer errmark.Boundary(&err)
	c, _, err := s.get(ctx, requestID)
	return c, err
}

func (s *Store) get(ctx context.Context, requestID string) (*claims.Claim, int64, error) {
	if err := receipt.ValidateRequestID(requestID); err != nil {
		return nil, 0, invalidID(err, "request id")
	}
	resp, err := s.readTxn(ctx, "read claim", claimAnswerCap(1), rangeOp(s.claimKey(requestID), 0, false))
	if err != nil {
		return nil, 0, err
	}
	return s.claimFrom(rangeKVs(resp, 0), requestID)
}

func (s *Store) claimFrom(kvs []*mvccpb.KeyValue, requestID string) (*claims.Claim, int64, error) {
	if len(kvs) == 0 {
		return nil, 0, errors.Wrap(claims.ErrNoClaim, "etcdstore: read claim")
	}
	c, err := decodeClaim(withFenceToken(kvs[0].Value, kvs[0].ModRevision), requestID)
	if err != nil {
		return nil, 0, err
	}
	return c, kvs[0].ModRevision, nil
}

// GetWithRequestLock reads the claim and whether its request lock is held in one linearizable read
// transaction (one snapshot, one round trip): the dispatcher's Status uses it instead of Get then
// RequestLockHeld.
func (s *Store) GetWithRequestLock(ctx context.Context, requestID string) (_ *claims.Claim, _ bool, err error) {
	defer errmark.Boundary(&err)
	if err := receipt.ValidateRequestID(requestID); err != nil {
		return nil, false, invalidID(err, "request id")
	}
	resp, err := s.readTxn(ctx, "read claim and request lock", claimAnswerCap(1),
		rangeOp(s.claimKey(requestID), 0, false), rangeOp(s.runLockKey(requestID), 0, false))
	if err != nil {
		return nil, false, err
	}
	c, _, err := s.claimFrom(rangeKVs(resp, 0), requestID)
	if err != nil {
		return nil, false, err
	}
	held, err := lockHeld(rangeKVs(resp, 1))
	if err != nil {
		return nil, false, err
	}
	return c, held, nil
}

// CompareAndSwap implements claims.ClaimStore: the generation check is made on the record read, and the
// write is fenced on that record's mod revision.
func (s *Store) CompareAndSwap(ctx context.Context, next *claims.Claim) (_ *claims.Claim, err error) {
	defer errmark.Boundary(&err)
	return s.compareAndSwap(ctx, next, nil)
}

// CompareAndSwapHeld implements claims.ClaimStore: one transaction compares the record's mod revision
// and, for each lease, that its lock key still exists with the create revision recorded when it was
// taken and the etcd lease of its holder. A lease from another Store is refused with ErrLeaseLost.
func (s *Store) CompareAndSwapHeld(ctx context.Context, next *claims.Claim, held ...claims.Lease) (_ *claims.Claim, err error) {
	defer errmark.Boundary(&err)
	ls := make([]*Lease, 0, len(held))
	for _, h := range held {
		l, ok := h.(*Lease)
		if !ok || l == nil || l.s != s {
			return nil, errors.Wrap(claims.ErrLeaseLost, "etcdstore: lease not from this store")
		}
		ls = append(ls, l)
	}
	return s.compareAndSwap(ctx, next, ls)
}

func (s *Store) compareAndSwap(ctx context.Context, next *claims.Claim, held []*Lease) (*claims.Claim, error) {
	if err := next.Validate(); err != nil {
		return nil, errmark.Mark(err, claims.ErrInvalidInput)
	}
	for _, l := range held {
		if !l.Held() {
			return nil, errors.Wrap(claims.ErrLeaseLost, "etcdstore: lease released or expired")
		}
	}
	cur, rev, err := s.get(ctx, next.RequestID)
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
	out := cloneClaim(next)
	out.Generation = cur.Generation + 1
	out.FenceToken = cur.FenceToken // issued once, never changed (read back from the record if unwritten)
	intent := held != nil && cur.Phase == claims.PhaseClaimed && out.Phase == claims.PhaseDispatching
	key := s.claimKey(next.RequestID)
	cmps := []clientv3.Cmp{clientv3.Compare(clientv3.ModRevision(key), "=", rev)}
	var thens []clientv3.Op
	switch open := s.openKey(out.MinionID, out.RequestID); {
	case out.Unresolved() && !cur.Unresolved():
		thens = append(thens, clientv3.OpPut(open, ""))
	case !out.Unresolved() && cur.Unresolved():
		thens = append(thens, clientv3.OpDelete(open))
	}
	var window clientv3.LeaseID
	if cur.DispatchedAt == nil && out.DispatchedAt != nil {
		// The dispatch intent: the dispatch window opens in its transaction, on a lease the cluster
		// expires StatusExpiry later.
		if window, err = s.windowLease(ctx, s.statusExpiry()); err != nil {
			return nil, err
		}
		thens = append(thens, clientv3.OpPut(s.dispatchWindowKey(out.RequestID), "", clientv3.WithLease(window)))
	}
	elses := []clientv3.Op{clientv3.OpGet(key)}
	for _, l := range held {
		cmps = append(cmps, clientv3.Compare(clientv3.CreateRevision(l.key), "=", l.createRev),
			clientv3.Compare(clientv3.LeaseValue(l.key), "=", l.sess.Lease()))
		elses = append(elses, clientv3.OpGet(l.key))
	}
	base := s.bases.get(out.MinionID)
	for attempt := 0; ; attempt++ {
		var fi fenceIntent
		txCmps, txThens, txElses := cmps, thens, elses
		if intent {
			// The token is the client's base plus this transaction's revision (fence.go), above the
			// caller's floor (next.FenceToken).
			if fi, err = s.planFenceIntent(out.MinionID, base, next.FenceToken, rev); err != nil {
				return nil, err
			}
			out.FenceToken = fenceTokenPending + fi.base.value
			txCmps = append(append([]clientv3.Cmp(nil), cmps...), fi.cmp)
			if fi.put != nil {
				txThens = append(append([]clientv3.Op(nil), thens...), *fi.put)
			}
			txElses = append(append([]clientv3.Op(nil), elses...), fi.reget)
		}
		data, err := out.MarshalBinary()
		if err != nil {
			return nil, err
		}
		txThens = append(txThens, clientv3.OpPut(key, string(data)))
		floor := s.rev.floor()
		resp, err := s.cli.Txn(ctx).If(txCmps...).Then(txThens...).Else(txElses...).Commit()
		if err != nil {
			if window != 0 && errors.Is(err, rpctypes.ErrLeaseNotFound) {
				s.forgetWindowLease(window)
			}
			return nil, writeErr(err, "update claim")
		}
		if err := s.rev.observe(resp.Header, floor); err != nil {
			return nil, err
		}
		if resp.Succeeded {
			if intent {
				if fi.put != nil {
					s.bases.set(out.MinionID, fenceBase{value: fi.base.value, modRev: resp.Header.Revision})
				}
				out.FenceToken = fi.base.value + uint64(resp.Header.Revision)
			}
			return out, nil
		}
		now, nowRev, err := s.claimFrom(resp.Responses[0].GetResponseRange().GetKvs(), next.RequestID)
		if err != nil {
			return nil, err
		}
		for i, l := range held {
			kvs := resp.Responses[1+i].GetResponseRange().GetKvs()
			if len(kvs) == 0 || kvs[0].CreateRevision != l.createRev || clientv3.LeaseID(kvs[0].Lease) != l.sess.Lease() {
				return now, errors.Wrap(claims.ErrLeaseLost, "etcdstore: lock key gone or taken over")
			}
		}
		if intent && nowRev == rev {
			// Only the client's base had moved (another replica raised it, or this Store's cache was
			// empty): build the token on the base as it is now.
			got, err := readFenceBase((*clientv3.GetResponse)(resp.Responses[len(resp.Responses)-1].GetResponseRange()))
			if err != nil {
				return now, err
			}
			s.bases.set(out.MinionID, got)
			if got != base && attempt < 4 {
				base = got
				continue
			}
		}
		return now, errors.Wrap(claims.ErrConflict, "etcdstore: claim changed meanwhile")
	}
}

// ListByClient implements claims.ClaimStore: one read of the client's index entries, then its claims in
// bounded batches (readClaims).
func (s *Store) ListByClient(ctx context.Context, minionID string) (_ []*claims.Claim, err error) {
	defer errmark.Boundary(&err)
	if err := receipt.ValidateMinionID(minionID); err != nil {
		return nil, invalidID(err, "minion id")
	}
	reqs, rev, err := s.listIndex(ctx, s.indexPrefix(minionID), "list client index")
	if err != nil {
		return nil, err
	}
	return s.readClaims(ctx, minionID, reqs, rev)
}

// listIndex reads the request ids of the index entries under pfx (keys only) and the revision of that
// read.
func (s *Store) listIndex(ctx context.Context, pfx, what string) ([]string, int64, error) {
	floor := s.rev.floor()
	resp, err := s.cli.Get(ctx, pfx, clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		return nil, 0, readErr(err, what)
	}
	if err := s.rev.observe(resp.Header, floor); err != nil {
		return nil, 0, err
	}
	reqs := make([]string, 0, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		if len(kv.Key) > MaxKeySize {
			return nil, 0, corrupt("index key of %d bytes exceeds the cap", errors.Safe(len(kv.Key)))
		}
		req, _ := strings.CutPrefix(string(kv.Key), pfx)
		if receipt.ValidateRequestID(req) != nil {
			return nil, 0, corrupt("index entry is not a request id")
		}
		reqs = append(reqs, req)
	}
	return reqs, resp.Header.Revision, nil
}

// readClaims reads the claims of reqs (index entries of minionID) at revision rev, listBatch per read
// transaction, each answer bounded by claimAnswerCap (so hostile oversized records cost a bounded amount
// of memory and end the listing with ErrCorruptClaim). A batch whose revision was compacted meanwhile is
// read again at the latest revision, and so is every later batch: each claim is then as committed at some
// point during the call, which is all a listing promises (the quarantine argument needs only that every
// claim indexed before the index read is read at or after it). An entry without its claim is
// ErrCorruptClaim: claims are never deleted, and skipping a deleted one could lift a quarantine.
func (s *Store) readClaims(ctx context.Context, minionID string, reqs []string, rev int64) ([]*claims.Claim, error) {
	out := make([]*claims.Claim, 0, len(reqs))
	for start := 0; start < len(reqs); start += listBatch {
		batch := reqs[start:min(start+listBatch, len(reqs))]
		ops := make([]*pb.RequestOp, len(batch))
		for i, req := range batch {
			ops[i] = rangeOp(s.claimKey(req), rev, false)
		}
		tr, err := s.readTxn(ctx, "read client claims", claimAnswerCap(len(batch)), ops...)
		if errors.Is(err, rpctypes.ErrCompacted) {
			rev = 0 // from here on at the latest revision, which cannot be compacted away
			for i := range ops {
				ops[i] = rangeOp(s.claimKey(batch[i]), 0, false)
			}
			tr, err = s.readTxn(ctx, "read client claims", claimAnswerCap(len(batch)), ops...)
		}
		if err != nil {
			return nil, err
		}
		for i, req := range batch {
			c, _, err := s.claimFrom(rangeKVs(tr, i), req)
			if errors.Is(err, claims.ErrNoClaim) {
				return nil, corrupt("index entry without a claim")
			}
			if err != nil {
				return nil, err
			}
			if c.MinionID != minionID {
				return nil, corrupt("index entry for a claim of another minion")
			}
			out = append(out, c)
		}
	}
	return out, nil
}

var (
	_ claims.ClaimStore = (*Store)(nil)
	_ claims.Leases     = (*Store)(nil)
	_ claims.Lease      = (*Lease)(nil)

	_ claims.UnresolvedLister  = (*Store)(nil)
	_ claims.UnresolvedScanner = (*Store)(nil)
)
