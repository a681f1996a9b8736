// Package safefile is the durable file discipline shared by the master's file
// claim store, the custom catalog and the receipt tests: a directory of small
// records with safe opens, atomic and exclusive writes, and kernel locks
// (flock(2), or OFD byte-range locks through a LockPool).
//
// Store keeps records as files directly in one directory, which must be owned
// by the expected user with mode exactly 0700. Every operation resolves the
// path from / again, with one openat2(2) and RESOLVE_NO_SYMLINKS (Linux 5.6+)
// or, where that fails or the kernel has none, a walk of its components with
// openat(O_NOFOLLOW|O_DIRECTORY), so a symlink in any component, also one
// swapped in after OpenStore, is refused; files must be
// regular, owned by the expected user, without group/other permission bits,
// with exactly one link. Every open of a record or lock file is O_NONBLOCK and
// is checked with fstat before any read, so a FIFO, socket or device planted
// at a record or lock name is refused at once (ErrNotRegular) instead of
// blocking the caller forever. Writes go to an O_EXCL 0600 temporary file, are
// fsynced, renamed into place (renameat, or renameat2 RENAME_NOREPLACE for
// CreateExclusive) and the directory is fsynced. A malformed or unsafe
// record is an error and is never replaced by these calls. Concurrent writers
// of one directory share its fsyncs (group commit: each waits for one that
// started after its own change), and the stores opened with one SyncGroup
// share every fsync, of files and directories alike: the callers that queue
// behind a running sync are served by one syncfs(2) of their file system
// (SyncGroup says why that is as durable, and how errors are kept). CreateEmpty makes an empty record directly
// (nothing to tear, so no temporary file), durable once its directory is
// synced; CreateExclusiveAfter makes a record visible only after other
// durability work that runs concurrently with the record's own data fsync.
//
// Locks are flock(2) locks on "<name>.lock" files in the store directory.
// flock was chosen because the kernel releases it when the holding process
// dies, however it dies (SIGKILL included): a held lock therefore means a live
// holder (possibly stopped or slow), and a free lock beside a non-terminal
// record means the worker is gone, which is how a running request is told
// apart from an abandoned claim. Lock files are never removed (removing a
// flock file races with a concurrent locker). flock is not reliable on NFS;
// the store must live on a local file system.
//
// A LockPool (Store.OpenLockPool) takes the same named locks without a
// descriptor per held lock, for holders of thousands of locks at once: lock
// "<name>" is a one-byte Linux OFD (open file description) write lock, at the
// offset of the inode number of "<name>.lock", on the one open file
// "<dir>/.locks". The kernel drops OFD locks when the holder dies, like flock;
// the pool's own table keeps the goroutines of one process apart (they share
// the description). The per-name files are still created and checked by the
// rules above, opened only for an instant. Pool locks and flock locks of the
// same name do not exclude each other: one kind per name, in every process.
package safefile
