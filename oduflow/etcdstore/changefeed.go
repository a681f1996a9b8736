package etcdstore

import (
	"context"
	"strings"

	"github.com/cockroachdb/errors"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// WatchChanges implements claims.ChangeFeed with one etcd watch on the claims' prefix: every put of a
// claim key (Create and each compare-and-swap, from any replica) calls changed with its request id. A
// watch the cluster cancels (compaction, a lost leader) returns an error; the caller starts it again.
func (s *Store) WatchChanges(ctx context.Context, changed func(requestID string)) error {
	prefix := s.prefix + claimsDir
	wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
	defer cancel()
	for resp := range s.cli.Watch(wctx, prefix, clientv3.WithPrefix(), clientv3.WithFilterDelete()) {
		if err := resp.Err(); err != nil {
			return errors.Wrap(err, "etcdstore: watch claims")
		}
		for _, ev := range resp.Events {
			if req, ok := strings.CutPrefix(string(ev.Kv.Key), prefix); ok && req != "" && !strings.Contains(req, "/") {
				changed(req)
			}
		}
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return errors.New("etcdstore: claims watch closed")
}
