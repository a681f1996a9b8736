package filestore

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/cockroachdb/errors"

	"github.com/oduflow/oduflow-go/internal/errmark"
	"github.com/oduflow/oduflow-go/internal/safefile"
	"github.com/oduflow/oduflow-go/oduflow/claims"
	"github.com/oduflow/oduflow-go/receipt"
)

// The per-client indexes of Store, empty files:
//
//	clients/<minion id>/<request id>  every claim of the client, durable before its claim's name can
//	                                  exist (Store.Create); ListByClient reads only this index
//	open/<minion id>/<request id>     the client's unresolved claims (Claim.Unresolved): created with
//	                                  the clients/ entry, in the same concurrent fsyncs; made durable
//	                                  before a CompareAndSwap writes an unresolved state over a resolved
//	                                  one, and removed after one writes a resolved state
//
// So an unresolved claim always has its open entry on disk (the reverse may not hold: an entry whose
// claim was resolved by a write that a crash interrupted before the removal, whose Create crashed
// before the claim's rename, or that a losing concurrent Create made again after the winner's worker
// had closed it, stays and costs one read), and the worker's preflight and Quarantine, which
// read open/ only (ListUnresolved), cost what the client's open requests cost, however long its history.

// maxEntryRemakes bounds how often stage makes again an entry that vanished between its create and its
// check (each time, a request resolved and closed in that instant): past it, the error is returned.
const maxEntryRemakes = 3

// indexTree is one tree of per-client index directories: clients/ (every claim of the client) or open/
// (its unresolved claims).
type indexTree struct {
	root *safefile.Store
	mu   sync.Mutex
	subs map[string]*clientIndex // open per-client index stores
}

func newIndexTree(root *safefile.Store) *indexTree {
	return &indexTree{root: root, subs: make(map[string]*clientIndex)}
}

// clientIndex is one client's index directory.
type clientIndex struct {
	st *safefile.Store
	// listed: the directory's own entry in its tree's root is known durable (this store fsynced the root
	// after finding or making the directory). Until then each Create of the client also fsyncs the root;
	// the fsync runs concurrently with the Create's other ones, so it adds no wait of its own. It is not
	// assumed for a directory found on disk: its creator may have died before syncing it.
	listed atomic.Bool
}

// dir returns the index directory of one client, making it when create is set (its entry in the root is
// synced by the Create's syncs). It returns nil, nil when the client has no index yet.
func (t *indexTree) dir(minionID string, create bool) (*clientIndex, error) {
	t.mu.Lock()
	ci := t.subs[minionID]
	t.mu.Unlock()
	if ci != nil {
		return ci, nil
	}
	cs, _, err := t.root.Sub(minionID, create)
	if err != nil {
		if !create && errors.Is(err, safefile.ErrNotExist) {
			return nil, nil
		}
		return nil, errors.Wrap(err, "oduflow: open client index")
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if cur := t.subs[minionID]; cur != nil {
		return cur, nil
	}
	ci = &clientIndex{st: cs}
	t.subs[minionID] = ci
	return ci, nil
}

// stage creates the entry of request in the client's directory of t (and the directory when missing)
// without waiting for either to be durable, and returns the work that makes them durable: an fsync of
// the client's directory and, until one succeeded, of the root, concurrently (each group-committed with
// the concurrent Creates of the same directory). An entry already there is checked (a FIFO, socket or
// symlink holding the name is refused, typed, rather than trusted) and synced all the same: its creator
// may not have synced it.
func (t *indexTree) stage(minionID, requestID string) (func() error, error) {
	ci, err := t.dir(minionID, true)
	if err != nil {
		return nil, err
	}
	entry, err := ci.st.CreateEmpty(requestID)
	for remade := 0; errors.Is(err, safefile.ErrExist); remade++ {
		if _, err = ci.st.Read(requestID); err == nil {
			entry = ci.st.SyncDir
			break
		}
		if !errors.Is(err, safefile.ErrNotExist) || remade == maxEntryRemakes {
			break
		}
		// The entry went between the two calls: an open entry closed by the worker of a concurrent
		// Create that won this request and already resolved it. Make it again: until its claim's
		// name is created this Create cannot know it lost, and an unresolved claim never lacks its
		// entry. (If it lost, the entry stays behind a resolved claim: one read, see above.)
		entry, err = ci.st.CreateEmpty(requestID)
	}
	if err != nil {
		return nil, errors.Wrap(err, "oduflow: index claim")
	}
	return func() error {
		var listed chan error
		if !ci.listed.Load() {
			// Concurrently with the entry's fsync: they share one journal commit (or, on a file system
			// without a journal, one merged device cache flush); one after the other, the second would
			// wait for a flush of its own.
			listed = make(chan error, 1)
			go func() { listed <- t.root.SyncDir() }()
		}
		err := entry()
		if err != nil {
			err = errors.Wrap(err, "oduflow: index claim")
		}
		if listed != nil {
			if lerr := <-listed; lerr != nil && err == nil {
				err = errors.Wrap(lerr, "oduflow: index client")
			} else if lerr == nil {
				ci.listed.Store(true)
			}
		}
		return err
	}, nil
}

// stageIndex stages the claim's entry in clients/ and, when open is set, in open/, and returns the
// work that makes all of it durable: their fsyncs, concurrently (one wait).
func (s *Store) stageIndex(minionID, requestID string, open bool) (func() error, error) {
	durable, err := s.idx.stage(minionID, requestID)
	if err != nil {
		return nil, err
	}
	var openDurable func() error
	if open {
		if openDurable, err = s.open.stage(minionID, requestID); err != nil {
			return nil, err
		}
	}
	s.at("index-staged")
	return func() error {
		var openErr chan error
		if openDurable != nil {
			openErr = make(chan error, 1)
			go func() { openErr <- openDurable() }()
		}
		err := durable()
		if openErr != nil {
			if oerr := <-openErr; err == nil {
				err = oerr
			}
		}
		if err == nil {
			s.at("index-synced")
		}
		return err
	}, nil
}

// openEntry makes the claim's open entry durable (CompareAndSwap into the unresolved set: before the
// claim's write).
func (s *Store) openEntry(minionID, requestID string) error {
	durable, err := s.open.stage(minionID, requestID)
	if err != nil {
		return err
	}
	return durable()
}

// closeEntry removes the claim's open entry (CompareAndSwap out of the unresolved set: after the claim's
// write is durable). It is not synced: an entry a crash brings back only costs a read, since readers
// filter with Unresolved.
func (s *Store) closeEntry(minionID, requestID string) error {
	ci, err := s.open.dir(minionID, false)
	if err != nil || ci == nil {
		return err
	}
	if err := ci.st.Remove(requestID); err != nil && !errors.Is(err, safefile.ErrNotExist) {
		return errors.Wrap(err, "oduflow: close open entry")
	}
	return nil
}

// Reindex scans every claim of the directory and adds missing per-client index entries (legacy claims)
// and the open entries of unresolved claims (claims written before the open index existed).
// A claim it cannot read stops the scan with an error matching claims.ErrCorruptClaim that names it. Every entry is
// durable before the scan is recorded done.
func (s *Store) Reindex(ctx context.Context) (err error) {
	defer errmark.Boundary(&err)
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
			if errors.Is(err, claims.ErrNoClaim) {
				continue
			}
			// Its owner is unknown, so no client can be proven clear of it: the scan stops (and is retried
			// by the next listing), naming the claim.
			return errors.WithStack(&unreadableClaimError{RequestID: req, Err: err})
		}
		var durable func() error
		switch indexed := s.hasIndexEntry(c); {
		case !indexed:
			durable, err = s.stageIndex(c.MinionID, c.RequestID, c.Unresolved())
		case c.Unresolved():
			durable, err = s.open.stage(c.MinionID, c.RequestID)
		default:
			continue // indexed (durably: by its Create, or an earlier scan) and resolved: nothing to add
		}
		if err != nil {
			return err
		}
		if err := durable(); err != nil {
			return err
		}
	}
	if err := s.st.WriteAtomic(indexDoneName, []byte("1\n")); err != nil {
		return storageErr(errors.Wrap(err, "oduflow: record index scan"))
	}
	s.mu.Lock()
	s.indexed = true
	s.mu.Unlock()
	return nil
}

// hasIndexEntry: c's clients/ entry exists (a regular file).
func (s *Store) hasIndexEntry(c *claims.Claim) bool {
	ci, err := s.idx.dir(c.MinionID, false)
	if err != nil || ci == nil {
		return false
	}
	_, err = ci.st.Read(c.RequestID)
	return err == nil
}

func (s *Store) ensureIndexed(ctx context.Context) error {
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
