package etcdstore

import (
	"sync"

	"github.com/cockroachdb/errors"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"

	"github.com/oduflow/oduflow-go/internal/errmark"
	"github.com/oduflow/oduflow-go/oduflow/claims"
)

// ErrRevisionRegressed: the cluster answered at a revision lower than one this Store had already seen
// before it sent the request, or as another cluster: it was restored from an earlier copy of its data
// (a data directory, a snapshot) or replaced. Its records may describe a past in which a request was not
// yet dispatched although it was, so nothing read from it may lead to a publication: every read and
// write of the claim store is refused with this error (which also matches claims.ErrClaimStore) until
// an operator has looked. Visible to the standard library's errors.Is.
var ErrRevisionRegressed = errmark.Mark(errors.New("etcdstore: cluster revision went backwards (restored or replaced cluster)"),
	claims.ErrClaimStore)

// revisionGuard is a Store's high-water mark of the cluster revision and the cluster id it answered
// with. etcd's revision only grows, and every read the store makes is linearizable, so a request sent
// after a response at revision r is answered at r or later. A request therefore records the mark when
// it starts (floor) and its answer must not be below it; the mark then rises to the answer. Comparing
// against the mark at answer time would be wrong: a read served before a concurrent write completed
// legitimately carries a lower revision than that write.
type revisionGuard struct {
	mu        sync.Mutex
	high      int64
	clusterID uint64
}

// floor is the mark when a request starts.
func (g *revisionGuard) floor() int64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.high
}

// observe checks the header of an answer to a request that started at floor and raises the mark.
func (g *revisionGuard) observe(h *pb.ResponseHeader, floor int64) error {
	if h == nil {
		return nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.clusterID != 0 && h.ClusterId != 0 && h.ClusterId != g.clusterID {
		return errors.Wrapf(ErrRevisionRegressed, "cluster id %x, was %x", errors.Safe(h.ClusterId), errors.Safe(g.clusterID))
	}
	if h.Revision < floor {
		return errors.Wrapf(ErrRevisionRegressed, "revision %d after %d", errors.Safe(h.Revision), errors.Safe(floor))
	}
	if g.clusterID == 0 {
		g.clusterID = h.ClusterId
	}
	g.high = max(g.high, h.Revision)
	return nil
}

// Revision is the highest cluster revision this Store has seen (operators, tests).
func (s *Store) Revision() int64 { return s.rev.floor() }
