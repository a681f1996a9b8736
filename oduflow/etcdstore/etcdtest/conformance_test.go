package etcdtest

import (
	"context"
	"net/url"
	"testing"
	"time"

	"github.com/oduflow/oduflow-go/oduflow/etcdstore"
	"github.com/oduflow/oduflow-go/oduflow/oduflowtest"
)

// conformanceTTL is the TTL of the stores the conformance suite opens: short, so that the suite's
// holder-death clauses (which wait up to twice the TTL plus slack) stay within the CI budget.
const conformanceTTL = 2 * time.Second

// etcdFactory runs the oduflowtest conformance suite against etcdstore.Store. A location is a claims URL
// (etcd://127.0.0.1:PORT/PREFIX) naming the shared embedded member and a fresh prefix, so a child process
// the suite re-executes reaches the parent's server over loopback from the location alone.
func etcdFactory() oduflowtest.StoreFactory {
	return oduflowtest.StoreFactory{
		Capabilities: oduflowtest.Capabilities{MultiProcess: true, LeaseTTL: conformanceTTL},
		New: func(t testing.TB) string {
			st := newStore(t) // starts the shared member on first use; its prefix is fresh
			u, err := url.Parse(st.Client().Endpoints()[0])
			if err != nil {
				t.Fatal(err)
			}
			return "etcd://" + u.Host + st.Prefix()
		},
		Open: func(ctx context.Context, loc string) (oduflowtest.Store, error) {
			opts, err := etcdstore.ParseURL(loc)
			if err != nil {
				return nil, err
			}
			return etcdstore.Open(ctx, append(opts, etcdstore.WithTTL(conformanceTTL))...)
		},
		OpenWithWindows: func(ctx context.Context, loc string, grace, expiry time.Duration) (oduflowtest.Store, error) {
			opts, err := etcdstore.ParseURL(loc)
			if err != nil {
				return nil, err
			}
			return etcdstore.Open(ctx, append(opts, etcdstore.WithTTL(conformanceTTL), etcdstore.WithStatusWindows(grace, expiry))...)
		},
		Corrupt: corruptAt,
		// Closing the handle's lessor stops every keepalive of its sessions without revoking anything:
		// the lock keys stay until the server expires their leases after the TTL, as for a holder that
		// hung or was partitioned away, while the handle's reads and writes keep working.
		KillSession: func(s oduflowtest.Store) { _ = s.(*etcdstore.Store).Client().Lease.Close() },
	}
}

// corruptAt writes data verbatim at the claim key of requestID under the location's prefix. Its client
// sends messages larger than the suite's oversized record (the store's own client need not).
func corruptAt(ctx context.Context, loc, requestID string, data []byte) error {
	return putRaw(ctx, loc, "/claims/"+requestID, data)
}

// TestConformance: the etcd store passes the ClaimStore and Leases conformance suite, child processes and
// expiring sessions included.
func TestConformance(t *testing.T) {
	oduflowtest.TestClaimStore(t, etcdFactory())
}
