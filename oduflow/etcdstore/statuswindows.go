package etcdstore

import (
	"context"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/oduflow/oduflow-go/internal/errmark"
	"github.com/oduflow/oduflow-go/oduflow/claims"
	"github.com/oduflow/oduflow-go/receipt"
)

// The status windows (see the package doc, Time): keys the cluster itself expires.
//
//	PREFIX/windows/launch/<request id>    put in the claim's creating transaction, on an etcd lease of TTL
//	                                      LaunchGrace (+ at most windowReuse): the launch window
//	PREFIX/windows/dispatch/<request id>  put in the transaction that records the dispatch intent, on an
//	                                      etcd lease of TTL StatusExpiry (+ at most windowReuse)
//
// Nobody keeps those leases alive: the cluster revokes them (and deletes their keys) when the TTL runs
// out, measured by the leader with durations, never by comparing clocks of two hosts.
const (
	launchWindowDir   = "/windows/launch/"
	dispatchWindowDir = "/windows/dispatch/"
	// windowReuse: one granted window lease serves every window opened within this long of its grant
	// (a lease grant is a raft write: one per second and TTL, not one per request). Its TTL is the
	// window rounded up to whole seconds plus this, so each window lasts at least its full length.
	windowReuse = time.Second
)

// The production windows, unless WithStatusWindows says otherwise (oduflow.DefaultTimers).
const (
	defaultLaunchGrace  = 30 * time.Second
	defaultStatusExpiry = 7260 * time.Second
)

// windowLeases caches the granted window lease of each TTL, and the grant in flight for each.
type windowLeases struct {
	grace, expiry time.Duration // WithStatusWindows, fixed at Open
	mu            sync.Mutex
	byTTL         map[int64]grantedLease
	granting      map[int64]*pendingGrant // concurrent openers wait for one grant, not the mutex
}

type grantedLease struct {
	id clientv3.LeaseID
	at time.Time // before the grant was sent: the lease expires no earlier than at + TTL
}

type pendingGrant struct {
	done chan struct{} // closed when id/err are set
	id   clientv3.LeaseID
	err  error
}

func (s *Store) launchWindowKey(request string) string { return s.prefix + launchWindowDir + request }
func (s *Store) dispatchWindowKey(request string) string {
	return s.prefix + dispatchWindowDir + request
}

// StatusWindows are the launch grace and the status expiry the store's window keys last, fixed at Open
// (WithStatusWindows; claims.WindowedStore): oduflow.New compares them with its Timers.
func (s *Store) StatusWindows() (launchGrace, statusExpiry time.Duration) {
	return s.windows.grace, s.windows.expiry
}

func (s *Store) launchGrace() time.Duration { return s.windows.grace }

func (s *Store) statusExpiry() time.Duration { return s.windows.expiry }

// windowLease returns a lease that expires no earlier than d from now (and at most d + 2 s later):
// granted now, or granted for the same TTL less than windowReuse ago. Concurrent callers share one
// grant; each waits for it at most as long as its own context allows, and the grant itself is bounded by
// the Store's request timeout (a grant stuck on a member that died does not hold up the others).
func (s *Store) windowLease(ctx context.Context, d time.Duration) (clientv3.LeaseID, error) {
	ttl := int64((d+time.Second-1)/time.Second) + int64(windowReuse/time.Second)
	w := &s.windows
	w.mu.Lock()
	if g, ok := w.byTTL[ttl]; ok && time.Since(g.at) < windowReuse {
		w.mu.Unlock()
		return g.id, nil
	}
	p, inFlight := w.granting[ttl]
	if !inFlight {
		if w.granting == nil {
			w.granting = make(map[int64]*pendingGrant)
		}
		p = &pendingGrant{done: make(chan struct{})}
		w.granting[ttl] = p
	}
	w.mu.Unlock()
	if !inFlight {
		at := time.Now()
		gctx, cancel := context.WithTimeout(s.ctx, s.reqTimeout)
		resp, err := s.cli.Grant(gctx, ttl)
		cancel()
		w.mu.Lock()
		delete(w.granting, ttl)
		if err == nil {
			if w.byTTL == nil {
				w.byTTL = make(map[int64]grantedLease)
			}
			w.byTTL[ttl] = grantedLease{id: resp.ID, at: at}
			p.id = resp.ID
		} else {
			// Nothing of the claim was written (a grant that did commit only leaves a lease that
			// expires), but the grant is the first write of Create and of the intent: it is classified
			// like their transaction, so a caller has one rule (an unknown outcome is re-read, never
			// assumed absent).
			p.err = writeErr(err, "grant a window lease")
		}
		w.mu.Unlock()
		close(p.done)
	}
	select {
	case <-p.done:
		return p.id, p.err
	case <-ctx.Done():
		return 0, writeErr(ctx.Err(), "grant a window lease")
	}
}

// forgetWindowLease drops a cached lease the cluster no longer has (a Put on it failed).
func (s *Store) forgetWindowLease(id clientv3.LeaseID) {
	s.windows.mu.Lock()
	defer s.windows.mu.Unlock()
	for ttl, g := range s.windows.byTTL {
		if g.id == id {
			delete(s.windows.byTTL, ttl)
		}
	}
}

// Liveness reads the request lock and the two window keys of c at one revision (one read transaction).
func (s *Store) Liveness(ctx context.Context, c *claims.Claim) (_ claims.Liveness, err error) {
	defer errmark.Boundary(&err)
	if err := receipt.ValidateRequestID(c.RequestID); err != nil {
		return claims.Liveness{}, invalidID(err, "request id")
	}
	resp, err := s.readTxn(ctx, "read request lock and windows", claimAnswerCap(1),
		rangeOp(s.runLockKey(c.RequestID), 0, false), rangeOp(s.launchWindowKey(c.RequestID), 0, true),
		rangeOp(s.dispatchWindowKey(c.RequestID), 0, true))
	if err != nil {
		return claims.Liveness{}, err
	}
	return livenessFrom(rangeKVs(resp, 0), rangeKVs(resp, 1), rangeKVs(resp, 2))
}

// GetWithLiveness reads the claim, its request lock and its two window keys in one linearizable read
// transaction (one snapshot, one round trip): the dispatcher's Status.
func (s *Store) GetWithLiveness(ctx context.Context, requestID string) (_ *claims.Claim, _ claims.Liveness, err error) {
	defer errmark.Boundary(&err)
	if err := receipt.ValidateRequestID(requestID); err != nil {
		return nil, claims.Liveness{}, invalidID(err, "request id")
	}
	resp, err := s.readTxn(ctx, "read claim, request lock and windows", claimAnswerCap(2),
		rangeOp(s.claimKey(requestID), 0, false), rangeOp(s.runLockKey(requestID), 0, false),
		rangeOp(s.launchWindowKey(requestID), 0, true), rangeOp(s.dispatchWindowKey(requestID), 0, true))
	if err != nil {
		return nil, claims.Liveness{}, err
	}
	c, _, err := s.claimFrom(rangeKVs(resp, 0), requestID)
	if err != nil {
		return nil, claims.Liveness{}, err
	}
	lv, err := livenessFrom(rangeKVs(resp, 1), rangeKVs(resp, 2), rangeKVs(resp, 3))
	if err != nil {
		return nil, claims.Liveness{}, err
	}
	return c, lv, nil
}

func livenessFrom(lock, launch, dispatch []*mvccpb.KeyValue) (claims.Liveness, error) {
	held, err := lockHeld(lock)
	if err != nil {
		return claims.Liveness{}, err
	}
	return claims.Liveness{RequestLockHeld: held, LaunchOpen: len(launch) > 0, DispatchOpen: len(dispatch) > 0}, nil
}
