package etcdstore

import (
	"context"
	"iter"
	"strings"

	"github.com/cockroachdb/errors"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/oduflow/oduflow-go/internal/errmark"
	"github.com/oduflow/oduflow-go/oduflow/claims"
	"github.com/oduflow/oduflow-go/receipt"
)

// The open index: PREFIX/open/<minion id>/<request id> exists exactly while the claim is unresolved
// ((*claims.Claim).Unresolved: not final, or quarantining). Create puts it in the claim's creating
// transaction; CompareAndSwap puts or deletes it in the transaction that moves the claim into or out of
// the unresolved set. So at every revision the open entries of a client are its unresolved claims, and
// the worker's preflight, Quarantine and Status read only those, whatever the client's history.
//
// Claims written before the index existed get their entries once per cluster: the first ListUnresolved
// that does not find PREFIX/meta/open-index-v1 scans the client index, puts the entry of each unresolved
// claim (fenced on the claim's mod revision, so a concurrent transition is never overwritten with a stale
// entry) and of each claim it cannot read (its client's listings then report it, never skip it), and
// then writes the marker. Replicas of earlier versions, which do not maintain the index,
// must all be stopped before a replica of this version starts.
const (
	openDir         = "/open/"
	openIndexMarker = "/meta/open-index-v1"
)

func (s *Store) openPrefix(minion string) string       { return s.prefix + openDir + minion + "/" }
func (s *Store) openKey(minion, request string) string { return s.openPrefix(minion) + request }

// ListUnresolved implements claims.UnresolvedLister: the client's open entries (one read, which fixes
// a revision) and their claims at that revision, in bounded batches. The claims it returns are
// unresolved at that revision; a claim resolved meanwhile may be returned as it was at a fresher one
// (callers filter with Unresolved).
func (s *Store) ListUnresolved(ctx context.Context, minionID string) (_ []*claims.Claim, err error) {
	defer errmark.Boundary(&err)
	if err := receipt.ValidateMinionID(minionID); err != nil {
		return nil, invalidID(err, "minion id")
	}
	if err := s.ensureOpenIndex(ctx); err != nil {
		return nil, err
	}
	reqs, rev, err := s.listIndex(ctx, s.openPrefix(minionID), "list unresolved claims")
	if err != nil {
		return nil, err
	}
	return s.readClaims(ctx, minionID, reqs, rev)
}

// ensureOpenIndex builds the open index of claims written before it existed, once per cluster, and
// within a Store one scan at a time (every worker's preflight asks; the first one scans, the others wait
// for it).
func (s *Store) ensureOpenIndex(ctx context.Context) error {
	if s.openIndex.Load() {
		return nil
	}
	s.openMu.Lock()
	defer s.openMu.Unlock()
	if s.openIndex.Load() {
		return nil
	}
	floor := s.rev.floor()
	resp, err := s.cli.Get(ctx, s.prefix+openIndexMarker, clientv3.WithCountOnly())
	if err != nil {
		return readErr(err, "read open index marker")
	}
	if err := s.rev.observe(resp.Header, floor); err != nil {
		return err
	}
	if resp.Count == 0 {
		if err := s.buildOpenIndex(ctx); err != nil {
			return err
		}
	}
	s.openIndex.Store(true)
	return nil
}

// markFreshOpenIndex writes the marker at Open when the prefix holds no claim yet (a new deployment):
// there is nothing to scan, and no preflight ever waits for a scan.
func (s *Store) markFreshOpenIndex(ctx context.Context) error {
	marker := s.prefix + openIndexMarker
	resp, err := s.cli.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(marker), "=", 0)).
		Then(clientv3.OpGet(s.prefix+clientsDir, clientv3.WithPrefix(), clientv3.WithCountOnly())).
		Commit()
	if err != nil {
		return readErr(err, "read open index marker")
	}
	if !resp.Succeeded { // the marker exists
		s.openIndex.Store(true)
		return nil
	}
	if resp.Responses[0].GetResponseRange().GetCount() > 0 {
		return nil // claims exist: the first ListUnresolved scans them
	}
	// A claim created meanwhile by a replica of this version has its open entry already.
	put, err := s.cli.Txn(ctx).If(clientv3.Compare(clientv3.CreateRevision(marker), "=", 0)).
		Then(clientv3.OpPut(marker, "1")).Commit()
	if err != nil {
		return writeErr(err, "write open index marker")
	}
	if put.Succeeded {
		s.openIndex.Store(true)
	}
	return nil
}

// buildOpenIndex puts the open entry of every indexed claim that is unresolved, or that cannot be read
// (so that its client's listings keep reporting it instead of skipping it), scanning the client index
// listBatch entries per read (their claims in one bounded read), and then the marker.
func (s *Store) buildOpenIndex(ctx context.Context) error {
	dir := s.prefix + clientsDir
	from, end := dir, clientv3.GetPrefixRangeEnd(dir)
	for {
		keys, err := s.cli.Get(ctx, from, clientv3.WithRange(end), clientv3.WithKeysOnly(),
			clientv3.WithLimit(listBatch), clientv3.WithSort(clientv3.SortByKey, clientv3.SortAscend))
		if err != nil {
			return readErr(err, "scan the client index for the open index")
		}
		type entry struct{ minion, req string }
		batch := make([]entry, 0, len(keys.Kvs))
		ops := make([]*pb.RequestOp, 0, len(keys.Kvs))
		for _, kv := range keys.Kvs {
			minion, req, ok := strings.Cut(strings.TrimPrefix(string(kv.Key), dir), "/")
			if !ok || receipt.ValidateMinionID(minion) != nil || receipt.ValidateRequestID(req) != nil {
				return corrupt("client index key is not a minion and request id")
			}
			batch = append(batch, entry{minion, req})
			ops = append(ops, rangeOp(s.claimKey(req), 0, false))
		}
		if len(ops) > 0 {
			tr, err := s.readTxn(ctx, "scan claims for the open index", claimAnswerCap(len(ops)), ops...)
			switch {
			case errors.Is(err, claims.ErrCorruptClaim): // an oversized record in the batch: one by one
				for _, e := range batch {
					if err := s.openEntryFor(ctx, e.minion, e.req); err != nil {
						return err
					}
				}
			case err != nil:
				return err
			default:
				for i, e := range batch {
					c, _, err := s.claimFrom(rangeKVs(tr, i), e.req)
					if err == nil && !c.Unresolved() {
						continue // resolved: no entry (the common case, one read for the batch)
					}
					if err := s.openEntryFor(ctx, e.minion, e.req); err != nil {
						return err
					}
				}
			}
		}
		if !keys.More || len(keys.Kvs) == 0 {
			break
		}
		from = string(keys.Kvs[len(keys.Kvs)-1].Key) + "\x00"
	}
	if _, err := s.cli.Put(ctx, s.prefix+openIndexMarker, "1"); err != nil {
		return writeErr(err, "write open index marker")
	}
	return nil
}

// openEntryFor puts the open entry of one indexed claim if it is unresolved, fenced on its mod revision
// (a claim that changed meanwhile is read again), or if it cannot be read (corrupt, oversized, missing).
func (s *Store) openEntryFor(ctx context.Context, minion, req string) error {
	for {
		c, rev, err := s.get(ctx, req)
		switch {
		case errors.Is(err, claims.ErrCorruptClaim) || errors.Is(err, claims.ErrNoClaim):
			if _, err := s.cli.Put(ctx, s.openKey(minion, req), ""); err != nil {
				return writeErr(err, "build the open index")
			}
			return nil
		case err != nil:
			return errors.Wrap(err, "etcdstore: build the open index")
		case !c.Unresolved():
			return nil
		}
		key := s.claimKey(req)
		resp, err := s.cli.Txn(ctx).If(clientv3.Compare(clientv3.ModRevision(key), "=", rev)).
			Then(clientv3.OpPut(s.openKey(minion, req), "")).Commit()
		if err != nil {
			return writeErr(err, "build the open index")
		}
		if resp.Succeeded {
			return nil
		}
	}
}

// ScanUnresolved implements claims.UnresolvedScanner: the open entries of every client, listBatch keys
// per range read (key order, so a page resumes after the last key it saw), and the claims of each page
// in bounded read transactions (readClaims). An entry without its claim is ErrCorruptClaim, as in a
// client's listing. A claim may be yielded resolved (callers filter).
func (s *Store) ScanUnresolved(ctx context.Context) iter.Seq2[*claims.Claim, error] {
	return func(yield func(*claims.Claim, error) bool) {
		if err := s.ensureOpenIndex(ctx); err != nil {
			yield(nil, err)
			return
		}
		dir := s.prefix + openDir
		from, end := dir, clientv3.GetPrefixRangeEnd(dir)
		for {
			floor := s.rev.floor()
			resp, err := s.cli.Get(ctx, from, clientv3.WithRange(end), clientv3.WithKeysOnly(),
				clientv3.WithLimit(listBatch), clientv3.WithSort(clientv3.SortByKey, clientv3.SortAscend))
			if err != nil {
				yield(nil, readErr(err, "scan the open index"))
				return
			}
			if err := s.rev.observe(resp.Header, floor); err != nil {
				yield(nil, err)
				return
			}
			// One page's entries, grouped by client (key order keeps a client's entries together).
			var minion string
			var reqs []string
			flush := func() bool {
				if len(reqs) == 0 {
					return true
				}
				cs, err := s.readClaims(ctx, minion, reqs, resp.Header.Revision)
				if err != nil {
					yield(nil, err)
					return false
				}
				for _, c := range cs {
					if !yield(c, nil) {
						return false
					}
				}
				reqs = reqs[:0]
				return true
			}
			for _, kv := range resp.Kvs {
				if len(kv.Key) > MaxKeySize {
					yield(nil, corrupt("index key of %d bytes exceeds the cap", errors.Safe(len(kv.Key))))
					return
				}
				m, req, ok := strings.Cut(strings.TrimPrefix(string(kv.Key), dir), "/")
				if !ok || receipt.ValidateMinionID(m) != nil || receipt.ValidateRequestID(req) != nil {
					yield(nil, corrupt("open index key is not a minion and request id"))
					return
				}
				if m != minion && !flush() {
					return
				}
				minion = m
				reqs = append(reqs, req)
			}
			if !flush() {
				return
			}
			if !resp.More || len(resp.Kvs) == 0 {
				return
			}
			from = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
		}
	}
}
