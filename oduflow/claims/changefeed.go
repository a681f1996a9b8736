package claims

import "context"

// ChangeFeed is the optional change feed of a ClaimStore: WatchChanges calls changed with the request id
// of every claim written from the call on, by any process or replica sharing the store, until ctx ends
// or the feed fails (it returns then, with ctx's error or the failure). A call may be repeated or merged
// (several writes, one call) and may name a claim nobody watches: it is a wake-up, never a value, and the
// caller reads the claim itself. changed must not block for long: the feed's own reading waits for it.
//
// oduflow's Dispatcher.Watch follows it with one goroutine per Dispatcher, so that a detached worker's or
// another replica's writes wake the watchers at once; without it they are seen at Watch's rechecks only.
// filestore.Store (inotify on its directory) and etcdstore.Store (an etcd watch on its prefix) implement
// it.
type ChangeFeed interface {
	WatchChanges(ctx context.Context, changed func(requestID string)) error
}
