package oduflow

import (
	"context"
	"strings"
	"sync/atomic"

	"github.com/cockroachdb/errors"

	"github.com/oduflow/oduflow-go/internal/errmark"
	"github.com/oduflow/oduflow-go/internal/safefile"
	"github.com/oduflow/oduflow-go/receipt"
)

// The per-client index of FileClaimStore: clients/<minion id>/<request id>, one empty file per claim of the
// client, each durable before its claim's name can exist (FileClaimStore.Create). ListByClient reads only
// this index, so the quarantine check costs what the client's own claims cost, however many other claims
// the directory holds.

// clientIndex is one client's index directory.
type clientIndex struct {
	st *safefile.Store
	// listed: the directory's own entry in clients/ is known durable (this store fsynced clients/ after
	// finding or making the directory). Until then each Create of the client also fsyncs clients/; the
	// fsync runs concurrently with the Create's other ones, so it adds no wait of its own. It is not
	// assumed for a directory found on disk: its creator may have died before syncing it.
	listed atomic.Bool
}

// clientIndex returns the index directory of one client, making it when create is set (its entry in
// clients/ is synced by the Create's syncs). It returns nil, nil when the client has no index yet.
func (s *FileClaimStore) clientIndex(minionID string, create bool) (*clientIndex, error) {
	s.mu.Lock()
	ci := s.clients[minionID]
	s.mu.Unlock()
	if ci != nil {
		return ci, nil
	}
	cs, _, err := s.idx.Sub(minionID, create)
	if err != nil {
		if !create && errors.Is(err, safefile.ErrNotExist) {
			return nil, nil
		}
		return nil, errors.Wrap(err, "oduflow: open client index")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if cur := s.clients[minionID]; cur != nil {
		return cur, nil
	}
	ci = &clientIndex{st: cs}
	s.clients[minionID] = ci
	return ci, nil
}

// stageIndex creates the index entry of request (and the client's index directory when missing) without
// waiting for either to be durable, and returns the work that makes them durable: an fsync of the client's
// index directory and, until one succeeded, of clients/, concurrently (each group-committed with the
// concurrent Creates of the same directory). An entry already there is checked (a FIFO, socket or symlink holding the name
// is refused, typed, rather than trusted) and synced all the same: its creator may not have synced it.
func (s *FileClaimStore) stageIndex(minionID, requestID string) (*clientIndex, func() error, error) {
	ci, err := s.clientIndex(minionID, true)
	if err != nil {
		return nil, nil, err
	}
	entry, err := ci.st.CreateEmpty(requestID)
	if errors.Is(err, safefile.ErrExist) {
		_, err = ci.st.Read(requestID)
		entry = ci.st.SyncDir
	}
	if err != nil {
		return nil, nil, errors.Wrap(err, "oduflow: index claim")
	}
	s.at("index-staged")
	return ci, func() error {
		var listed chan error
		if !ci.listed.Load() {
			// Concurrently with the entry's fsync: they share one journal commit (or, on a file system
			// without a journal, one merged device cache flush); one after the other, the second would
			// wait for a flush of its own.
			listed = make(chan error, 1)
			go func() { listed <- s.idx.SyncDir() }()
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
		if err == nil {
			s.at("index-synced")
		}
		return err
	}, nil
}

// Reindex scans every claim of the directory and adds missing per-client index entries (legacy claims).
// A claim it cannot read stops the scan with an error matching ErrCorruptClaim that names it. Every entry is
// durable before the scan is recorded done.
func (s *FileClaimStore) Reindex(ctx context.Context) (err error) {
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
			if errors.Is(err, ErrNoClaim) {
				continue
			}
			// Its owner is unknown, so no client can be proven clear of it: the scan stops (and is retried
			// by the next listing), naming the claim.
			return errors.WithStack(&unreadableClaimError{RequestID: req, Err: err})
		}
		_, durable, err := s.stageIndex(c.MinionID, c.RequestID)
		if err != nil {
			return err
		}
		if err := durable(); err != nil {
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
