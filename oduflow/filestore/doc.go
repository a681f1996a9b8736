// Package filestore is the file-backed claim store (claims.Store) of the oduflow dispatcher, its default:
// the processes of one host share a private directory (oduflow.New opens /var/cache/salt/oduflow-apply
// unless oduflow.WithClaimDir names another). It implements the
// whole contract of package claims and its optional capabilities but one (ClaimLockReader, below);
// oduflowtest.TestClaimStore checks it. It imports package claims, never package oduflow.
//
// # Layout
//
// One file per request, <request id>.json (0600), in a directory (0700, owned by the service account)
// written through the module's safe file discipline: exclusive temporary file, fsync, rename, directory
// fsync; every open refuses symlinks, foreign owners, group or other bits, multiply linked and
// non-regular files. Beside the claims:
//
//	clients/<minion id>/<request id>  the per-client index (empty files): ListByClient reads only it
//	open/<minion id>/<request id>     the client's unresolved claims (UnresolvedLister, UnresolvedScanner)
//	fences/<minion id>/t-<N>          the client's fencing token counter (fence.go)
//	.locks                            the lock pool: every request lock and client lease is a byte range
//	                                  of this one file (OFD locks, released by the kernel when the holder
//	                                  dies)
//	index-v2.done                     the one-time index scan of legacy claims is done (Reindex)
//
// # The contract, as this store meets it
//
//   - Create is an exclusive create (RENAME_NOREPLACE) made visible only after the claim's index entries
//     are durable, so a crash anywhere leaves no claim its client's index misses (Store.Create lists the
//     steps).
//   - CompareAndSwap and CompareAndSwapHeld run under a per-request record lock with a generation check;
//     a kernel lock cannot be lost while its holder lives, so "still held" is: one of this store's
//     leases, not released, its pool file still the directory's (checked before and after the rename).
//   - The dispatch intent's fencing token is the client's counter plus one (above the caller's floor),
//     its name made durable before the claim holding it.
//   - Every fsync of the store goes through one group commit (internal safefile.SyncGroup): concurrent
//     Creates, intents and terminal commits that queue behind a running sync share one syncfs(2) of the
//     claim file system (one journal commit); a writer alone fsyncs its own files. A writeback error the
//     file system reports fails that write and every later one with claims.ErrClaimStore until the store
//     is opened again (the kernel reports an error once, and may have dropped what it could not write).
//   - A full or read-only file system refuses a write with claims.ErrClaimStore and leaves nothing
//     half-written; an unreadable claim fails its client's listing with an error matching
//     claims.ErrCorruptClaim that names it (UnreadableRequestID).
//
// # Optional capabilities
//
//   - UnresolvedLister and UnresolvedScanner: the open/ index, kept exact at every transition (an entry
//     is durable before a claim becomes unresolved and removed after it is resolved).
//   - WindowedStore: the status windows measured on this host's monotonic clock (the boot id and
//     CLOCK_BOOTTIME, stamped into the claim at creation and at the dispatch intent), never with a wall
//     clock; a claim directory is one host's, so every reader measures with the writer's clock. Their
//     lengths are given at Open (WithStatusWindows; the Dispatcher's Timers) and fixed for the Store's life.
//   - ClaimLockReader is not implemented: the dispatcher reads the claim and its liveness through
//     GetWithLiveness, local reads with no round trip to save.
//
// Safe for concurrent use by any number of goroutines and processes sharing the directory. Every process
// sharing it must take the locks through this package (a process using flock on per-name files would not
// be excluded).
package filestore
