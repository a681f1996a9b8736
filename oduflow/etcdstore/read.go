package etcdstore

import (
	"context"
	"strings"
	"time"

	"github.com/cockroachdb/errors"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Bounded reads. A record under the prefix may have been written by anyone with access to the cluster,
// at up to etcd's request limit (1.5 MiB by default) per key. A claim is at most MaxClaimSize, so every
// read of claims states how large its answer may be (the records it asks for at their cap, their keys,
// and answerOverhead) and gRPC refuses a larger answer from its length prefix, before allocating it:
// a read of hostile records costs the client a bounded amount of memory, however large they are, and
// ends in ErrCorruptClaim (some record of the answer is larger than a claim can be).

// answerOverhead is what an answer holds besides its records' keys and values: headers, per-record
// revisions and protobuf framing (about 40 bytes a record), with room to spare.
const answerOverhead = 4 << 10

// claimAnswerCap is the largest answer to a read of n claims (and of up to n lock keys).
func claimAnswerCap(n int) int { return answerOverhead + n*(MaxClaimSize+2*MaxKeySize+64) }

// rangeOp is one read of a transaction: key at revision rev (0: the latest), keys only when keysOnly.
func rangeOp(key string, rev int64, keysOnly bool) *pb.RequestOp {
	return &pb.RequestOp{Request: &pb.RequestOp_RequestRange{RequestRange: &pb.RangeRequest{
		Key: []byte(key), Revision: rev, KeysOnly: keysOnly}}}
}

// readTxn runs ops in one read transaction (linearizable, one snapshot) whose answer may be at most
// maxBytes, checking its revision against the Store's high-water mark. An answer over maxBytes is
// ErrCorruptClaim; other failures match claims.ErrClaimStore (or rpctypes.ErrCompacted for a read at a
// compacted revision).
func (s *Store) readTxn(ctx context.Context, what string, maxBytes int, ops ...*pb.RequestOp) (*pb.TxnResponse, error) {
	floor := s.rev.floor()
	var (
		resp *pb.TxnResponse
		err  error
	)
	wait := readRetryFirst
	for attempt := 1; ; attempt++ {
		resp, err = s.kv.Txn(ctx, &pb.TxnRequest{Success: ops}, grpc.MaxCallRecvMsgSize(maxBytes))
		if err == nil || !retryableRead(err) || attempt >= readAttempts || ctx.Err() != nil {
			break
		}
		select { // a read changes nothing: retried as the client library retries its own reads
		case <-ctx.Done():
		case <-time.After(wait):
		}
		wait *= 2
	}
	if err != nil {
		if tooLarge(err) && ctx.Err() == nil {
			return nil, corrupt("%s: answer larger than its records can be (%d bytes allowed)", errors.Safe(what),
				errors.Safe(maxBytes))
		}
		return nil, readErr(rpctypes.Error(err), what)
	}
	if err := s.rev.observe(resp.Header, floor); err != nil {
		return nil, err
	}
	return resp, nil
}

// Retries of a read the server could not serve right now (no leader, overloaded, a member going away).
const (
	readAttempts   = 5
	readRetryFirst = 25 * time.Millisecond
)

// tooLarge: gRPC refused the answer from its length prefix (client side). The server's own
// ResourceExhausted ("too many requests") is something else: it is retried.
func tooLarge(err error) bool {
	st, ok := status.FromError(err)
	return ok && st.Code() == codes.ResourceExhausted && strings.Contains(st.Message(), "larger than max")
}

func retryableRead(err error) bool {
	switch status.Code(err) {
	case codes.Unavailable:
		return true
	case codes.ResourceExhausted:
		return !tooLarge(err)
	}
	return false
}

// rangeKVs is the records the i-th read of a transaction answered.
func rangeKVs(resp *pb.TxnResponse, i int) []*mvccpb.KeyValue {
	return resp.Responses[i].GetResponseRange().GetKvs()
}
