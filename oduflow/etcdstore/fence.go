package etcdstore

import (
	"bytes"
	"strconv"
	"sync"

	"github.com/cockroachdb/errors"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/oduflow/oduflow-go/internal/errmark"
	"github.com/oduflow/oduflow-go/oduflow/claims"
)

// Fencing tokens. The token of a dispatch intent is the client's fence base plus the revision of the
// transaction that records it (CompareAndSwapHeld from phase claimed to dispatching). etcd revisions
// strictly increase across the whole cluster and a client's base never decreases, so a client's tokens
// strictly increase, whichever replica or process issued them.
//
// The base, PREFIX/fencebase/<minion id> (a decimal; absent is 0), is what lets a store issue tokens
// above a minion's high-water mark that this cluster's revision has not reached: a new cluster, one
// restored from an earlier copy, or a client another store also fences. The dispatcher passes the mark
// it read from the minion as a floor (next.FenceToken); when base + the claim's mod revision is not above
// it, the intent's transaction raises the base to the floor (so the token, base + a revision greater than
// that mod revision, is above it). The intent compares the base it used (its mod revision, or its absence),
// so two intents of one client can never use different bases at out-of-order revisions; the base a Store
// last saw for a client is cached, and a stale cache costs one more transaction, never a wrong token.
//
// A transaction cannot write its own revision into the value it puts, so the intent's record holds a
// placeholder, fence_token = 2^53 + base (above claims.MaxFenceToken, so never a token), and a reader
// replaces it by base + the record's mod revision (withFenceToken), which is the intent's revision until
// the claim's next write. Every later write carries the token from the record it replaces
// (compareAndSwap fences on that record's mod revision, so the first write after the intent reads
// exactly the intent's revision) and stores it as a number. Claims dispatched before fencing (or through
// a plain CompareAndSwap) have no token and get none.
const fenceTokenPending = claims.MaxFenceToken + 1

// fenceHeadroom is how far below MaxFenceToken a base must stay for base + revision to remain a token
// (2^40 revisions: decades of writes).
const fenceHeadroom = 1 << 40

// fenceFieldPrefix is how MarshalBinary writes the token field between two fields of a claim. Quotes
// inside a JSON string are escaped, so these bytes can only be the field itself (the strict decode
// refuses a repeated one).
var fenceFieldPrefix = []byte(`,"fence_token":`)

const fenceBaseDir = "/fencebase/"

func (s *Store) fenceBaseKey(minion string) string { return s.prefix + fenceBaseDir + minion }

// withFenceToken returns the stored claim data with a pending token (2^53 + base) replaced by base +
// modRevision.
func withFenceToken(data []byte, modRevision int64) []byte {
	i := bytes.Index(data, fenceFieldPrefix)
	if i < 0 || modRevision <= 0 {
		return data
	}
	start := i + len(fenceFieldPrefix)
	end := start
	for end < len(data) && data[end] >= '0' && data[end] <= '9' {
		end++
	}
	v, err := strconv.ParseUint(string(data[start:end]), 10, 64)
	if err != nil || v < fenceTokenPending || end >= len(data) || data[end] != ',' {
		return data // a number the strict decode judges (a token, or out of range: corrupt)
	}
	token := v - fenceTokenPending + uint64(modRevision)
	out := make([]byte, 0, len(data))
	out = append(out, data[:start]...)
	out = strconv.AppendUint(out, token, 10)
	return append(out, data[end:]...)
}

// fenceBase is a client's base as a Store last saw it: its value and the mod revision of its key (0:
// absent).
type fenceBase struct {
	value  uint64
	modRev int64
}

// fenceBases caches the base of each client this Store issued tokens for.
type fenceBases struct{ m sync.Map } // minion id -> fenceBase

func (f *fenceBases) get(minion string) fenceBase {
	if v, ok := f.m.Load(minion); ok {
		return v.(fenceBase)
	}
	return fenceBase{}
}

func (f *fenceBases) set(minion string, b fenceBase) { f.m.Store(minion, b) }

// fenceIntent is the base part of one intent transaction: the compare on the base used, the put that
// raises it (if any) and the get that reads it back when the transaction fails.
type fenceIntent struct {
	base  fenceBase // the base the token is built on (after raising)
	cmp   clientv3.Cmp
	put   *clientv3.Op
	reget clientv3.Op
}

// planFenceIntent builds the base part of an intent for minion on the cached base b: raised to floor when
// b.value + claimRev is not above it (the intent's revision is above claimRev).
func (s *Store) planFenceIntent(minion string, b fenceBase, floor uint64, claimRev int64) (fenceIntent, error) {
	key := s.fenceBaseKey(minion)
	fi := fenceIntent{base: b, reget: clientv3.OpGet(key)}
	if b.modRev == 0 {
		fi.cmp = clientv3.Compare(clientv3.CreateRevision(key), "=", 0)
	} else {
		fi.cmp = clientv3.Compare(clientv3.ModRevision(key), "=", b.modRev)
	}
	if floor > 0 && b.value+uint64(claimRev) <= floor {
		if floor > claims.MaxFenceToken-fenceHeadroom {
			return fi, errmark.Mark(errors.Newf("etcdstore: fence tokens exhausted (floor %d)", errors.Safe(floor)),
				claims.ErrClaimStore)
		}
		put := clientv3.OpPut(key, strconv.FormatUint(floor, 10))
		fi.put, fi.base.value = &put, floor
	}
	return fi, nil
}

// readFenceBase decodes the base key read back by a failed intent transaction.
func readFenceBase(resp *clientv3.GetResponse) (fenceBase, error) {
	if resp == nil || len(resp.Kvs) == 0 {
		return fenceBase{}, nil
	}
	kv := resp.Kvs[0]
	v, err := strconv.ParseUint(string(kv.Value), 10, 64)
	if err != nil || len(kv.Value) > 20 || v > claims.MaxFenceToken-fenceHeadroom || kv.Lease != 0 {
		return fenceBase{}, corrupt("fence base of a client is not a decimal base written by this store")
	}
	return fenceBase{value: v, modRev: kv.ModRevision}, nil
}
