package etcdtest

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/oduflow/oduflow-go/oduflow/catalog"
	"github.com/oduflow/oduflow-go/oduflow/claims"
	"github.com/oduflow/oduflow-go/oduflow/etcdstore"
	"github.com/oduflow/oduflow-go/oduflow/oduflowtest"
	"github.com/oduflow/oduflow-go/receipt"
)

// etcdCatalog is a catalog handle with the Store it lives in, closed together.
type etcdCatalog struct {
	catalog.Store
	st *etcdstore.Store
}

func (c etcdCatalog) Close() error { return c.st.Close() }

// openCatalog opens one more replica (its own client) of the catalog at an etcd:// location.
func openCatalog(ctx context.Context, loc string) (etcdCatalog, error) {
	opts, err := etcdstore.ParseURL(loc)
	if err != nil {
		return etcdCatalog{}, err
	}
	st, err := etcdstore.Open(ctx, append(opts, etcdstore.WithTTL(conformanceTTL))...)
	if err != nil {
		return etcdCatalog{}, err
	}
	cat, err := st.Catalog()
	if err != nil {
		_ = st.Close()
		return etcdCatalog{}, err
	}
	return etcdCatalog{Store: cat, st: st}, nil
}

// storeLocation is the etcd:// URL of a store on the shared member under its prefix.
func storeLocation(t testing.TB, st *etcdstore.Store) string {
	u, err := url.Parse(st.Client().Endpoints()[0])
	if err != nil {
		t.Fatal(err)
	}
	return "etcd://" + u.Host + st.Prefix()
}

// etcdCatalogFactory runs the oduflowtest catalog suite against the etcd catalog: every backend is a
// fresh prefix on the shared embedded member, every handle a Store of its own (a replica).
func etcdCatalogFactory() oduflowtest.CatalogFactory {
	return oduflowtest.CatalogFactory{
		New: func(t testing.TB) string { return storeLocation(t, newStore(t)) },
		Open: func(ctx context.Context, loc string) (catalog.Store, error) {
			return openCatalog(ctx, loc)
		},
		Corrupt: func(ctx context.Context, loc string, r oduflowtest.CatalogRecord, data []byte) error {
			key := "/catalog/def/" + r.ID
			switch {
			case r.Execution:
				key = "/catalog/exe/" + r.MinionID + "/" + r.ID
			case r.Assignment:
				key = "/catalog/asg/" + r.MinionID + "/" + r.ID
			}
			return putRaw(ctx, loc, key, data)
		},
		MaxRecordSize: 1 << 20, // the etcd catalog's record cap
		LockTTL:       conformanceTTL,
		MultiProcess:  true, // a location is an etcd:// URL: a child reaches the member
		// Closing the handle's lessor stops the keepalives without revoking anything: the lock key stays
		// until the server expires its lease after the TTL, as for a holder that hung or was cut off.
		KillHolder: func(st catalog.Store) { _ = st.(etcdCatalog).st.Client().Lease.Close() },
	}
}

// putRaw writes data verbatim at key under the location's prefix (a client that sends large messages).
func putRaw(ctx context.Context, loc, key string, data []byte) error {
	u, err := url.Parse(loc)
	if err != nil {
		return err
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{"http://" + u.Host}, DialTimeout: 10 * time.Second,
		MaxCallSendMsgSize: 4 << 20})
	if err != nil {
		return err
	}
	defer cli.Close()
	_, err = cli.Put(ctx, strings.TrimSuffix(u.Path, "/")+key, string(data))
	return err
}

// TestCatalogConformance: the etcd catalog passes the catalog.Store conformance suite, replicas racing
// on one member and a holder whose session lapses included.
func TestCatalogConformance(t *testing.T) {
	oduflowtest.TestCatalogStore(t, etcdCatalogFactory())
}

// TestCatalogHostileKeys: records the package never writes (the name index, the request index, an
// assignment, a key that is no id) read back as catalog.ErrCorrupt, never a panic or a silent skip.
func TestCatalogHostileKeys(t *testing.T) {
	ctx := context.Background()
	st := newStore(t)
	loc := storeLocation(t, st)
	cat, err := st.Catalog()
	if err != nil {
		t.Fatal(err)
	}
	const src = "hello:\n  test.succeed_without_changes:\n    - name: hello\n"
	d, err := cat.CreateDefinition(ctx, "acme", "web", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	minion, req := newMinion(), receipt.NewRequestID()
	if _, err := cat.Assign(ctx, d.ID, minion, "acme"); err != nil {
		t.Fatal(err)
	}
	hostile := func(key, data string, read func() error) {
		t.Helper()
		if err := putRaw(ctx, loc, key, []byte(data)); err != nil {
			t.Fatal(err)
		}
		if err := read(); !errors.Is(err, catalog.ErrCorrupt) {
			t.Errorf("%s = %q: got %v, want catalog.ErrCorrupt", key, data, err)
		}
	}
	hostile("/catalog/rid/"+req, `{"request_id":"`+req+`","kind":"pointer","minion_id":"`+minion+`","execution_id":"`+req+`"}`,
		func() error { _, err := cat.Execution(ctx, req); return err })
	hostile("/catalog/rid/"+req, `{"request_id":"`+req+`","kind":"execution","minion_id":"`+minion+`","execution_id":"`+req+`"}`,
		func() error { _, _, err := cat.Resolve(ctx, req); return err }) // an index without its execution
	hostile("/catalog/asg/"+minion+"/"+d.ID, `{"definition_id":"`+d.ID+`","minion_id":"`+minion+`","company":""}`,
		func() error { _, err := cat.Assignment(ctx, d.ID, minion); return err })
	hostile("/catalog/asg/"+minion+"/not-an-id", `{}`,
		func() error { _, err := cat.Assignments(ctx, minion); return err })
	hostile("/catalog/def/"+d.ID, `{"id":"`+d.ID+`","company":"acme","name":"web","source":"eA==","revision":0,"digest":"x"}`,
		func() error { _, err := cat.Definition(ctx, d.ID); return err })
	other := receipt.NewRequestID()
	hostile("/catalog/def/"+other, `{"id":"`+other+`","company":"acme","name":"web2","source":"eA==","revision":1,`+
		`"digest":"`+d.Digest+`","created_at":"2026-01-01T00:00:00Z","updated_at":"2026-01-01T00:00:00Z"}`+strings.Repeat(" ", 1<<20),
		func() error { _, err := cat.Definitions(ctx); return err })
}

// TestCatalogOutcomeUnknown: a catalog write against a member that is gone is ErrOutcomeUnknown (it may
// have committed), and a read is oduflow.ErrClaimStore (nothing written); neither is a catalog refusal.
func TestCatalogOutcomeUnknown(t *testing.T) {
	c := startCluster(t, 1)
	s := openStores(t, c.clients, "/catalog-unknown", 1, etcdstore.WithDialTimeout(2*time.Second))[0]
	cat, err := s.Catalog()
	if err != nil {
		t.Fatal(err)
	}
	const src = "hello:\n  test.succeed_without_changes:\n    - name: hello\n"
	d, err := cat.CreateDefinition(context.Background(), "acme", "web", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	comp, err := catalog.Compile(d.Source)
	if err != nil {
		t.Fatal(err)
	}
	c.stop(0)
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	_, err = cat.CreateExecution(ctx, catalog.Execution{RequestID: receipt.NewRequestID(), Company: "acme",
		DefinitionID: d.ID, Revision: 1, Source: d.Source, Canonical: comp.Canonical, Digest: comp.Digest,
		MinionID: newMinion(), Mode: catalog.ModeApply})
	if !errors.Is(err, etcdstore.ErrOutcomeUnknown) || errors.Is(err, catalog.ErrExists) || errors.Is(err, catalog.ErrInvalid) {
		t.Fatalf("CreateExecution against a stopped member: %v", err)
	}
	rctx, rcancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer rcancel()
	if _, err := cat.Definition(rctx, d.ID); !errors.Is(err, claims.ErrClaimStore) || errors.Is(err, catalog.ErrNotFound) {
		t.Fatalf("Definition against a stopped member: %v", err)
	}
}
