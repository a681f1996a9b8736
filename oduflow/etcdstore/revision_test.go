package etcdstore

import (
	"errors"
	"testing"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"

	"github.com/oduflow/oduflow-go/oduflow/claims"
)

// TestRevisionGuard: an answer below the mark of its request's start is a rewind; an answer below a mark
// raised by a concurrent request after this one started is not (a linearizable read served before that
// write); another cluster id is refused too.
func TestRevisionGuard(t *testing.T) {
	var g revisionGuard
	h := func(rev int64, cluster uint64) *pb.ResponseHeader {
		return &pb.ResponseHeader{Revision: rev, ClusterId: cluster}
	}
	early := g.floor() // a read sent now
	if err := g.observe(h(10, 7), g.floor()); err != nil {
		t.Fatal(err)
	}
	if err := g.observe(h(9, 7), early); err != nil {
		t.Fatalf("a read sent before the write at 10, answered at 9: %v", err)
	}
	err := g.observe(h(9, 7), g.floor())
	if !errors.Is(err, ErrRevisionRegressed) || !errors.Is(err, claims.ErrClaimStore) {
		t.Fatalf("a read sent after 10 answered at 9: %v", err)
	}
	if err := g.observe(h(11, 8), g.floor()); !errors.Is(err, ErrRevisionRegressed) {
		t.Fatalf("another cluster: %v", err)
	}
	if err := g.observe(h(12, 7), g.floor()); err != nil || g.floor() != 12 {
		t.Fatalf("mark after 12: %d %v", g.floor(), err)
	}
}
