// Package oduflowtest holds test helpers for code built on package oduflow: the conformance suite every
// claims.ClaimStore and claims.Leases implementation must pass (the contract of package oduflow/claims,
// which package oduflow names too), and MemoryStore, an in-memory store for unit tests of services that
// embed the dispatcher (not durable, single process). The suite and MemoryStore are written against
// package claims only: this package does not import the dispatcher.
//
// # Fake minions
//
// The fake protocol-1 minions are in the sub-package fakeminion: a Go model of the minion module
// (fakeminion.NewModel) and a host of the real Python module (fakeminion.StartPython), registered on the
// fake Salt master of package salt/salttest with fakeminion.Add (key accepted, so signed receipt proofs
// verify). Together with MemoryStore they let a service test its controller end to end over real sockets
// (see the fakeminion package example). They are a separate package because package oduflow's own tests
// use them, and need none of the suite.
//
// # Running the suite against a store
//
// TestClaimStore runs one subtest per clause of the ClaimStore and Leases contract: create-if-absent under
// racing goroutines and racing OS processes, generation semantics and fenced-update races, immutable
// identity, the guarded CompareAndSwapHeld (held, released, taken over, foreign, expired), the fencing
// tokens of the dispatch intent (recorded, never changed, strictly increasing per client across
// goroutines and OS processes: FenceTokens), lease
// exclusivity between two handles of one backend (two controller replicas), release when the holder dies,
// ListByClient consistency under concurrent creates, and malformed or foreign records (ErrCorruptClaim,
// never a panic). Every error is checked with the standard library's errors.Is.
//
// A StoreFactory tells the suite how to make a fresh backend (New returns its location), how to open a
// handle on a location (Open; OpenWithWindows for a claims.WindowedStore, whose status windows are given
// when it is built), and what the store cannot do (Capabilities, and nil Corrupt or KillSession): an
// in-memory store has no other processes, a store whose leases expire by TTL releases a dead holder's
// leases only after the TTL.
//
// Where the contract leaves a choice, the suite takes the stricter reading, because the dispatcher's
// at-most-once promise depends on it: an update changing an identity field is refused with ErrConflict
// (not silently applied), and a client with a corrupt claim fails ListByClient with ErrCorruptClaim (the
// claim is not skipped, which could hide a dispatched request from the quarantine check). A lease of
// another backend, or of no store at all, is foreign: CompareAndSwapHeld refuses it with ErrLeaseLost.
//
// # Running the catalog suite against a catalog
//
// TestCatalogStore does the same for catalog.Store (the custom catalog: catalog.FileStore, the etcd
// catalog of oduflow/etcdstore): definitions and the one-definition-per-name rule under goroutines racing
// on two handles, assignments, execution snapshots (identical-snapshot idempotence, one snapshot per
// request id under races), pointers, the final-outcome rule, LockServer exclusivity across handles and
// its release when the holder's process is killed (MultiProcess) or its session lapses (KillHolder), and
// malformed records (catalog.ErrCorrupt). A CatalogFactory names its backends by location as a
// StoreFactory does.
//
// # Child processes
//
// With Capabilities.MultiProcess the suite re-executes the test binary (os.Args[0]) with -test.run
// selecting the Test function that called TestClaimStore, and the environment variable ChildEnv carrying
// the child's role and the backend's location. In the child, that same Test function runs again and calls
// TestClaimStore, which sees ChildEnv and plays the role (race Create, race fenced updates, or hold leases
// until killed with SIGKILL) instead of running the suite. So the only wiring a store author needs is that
// the factory can be built in the child exactly as in the parent, and that Open reaches the backend from
// the location string alone (a directory path, a list of endpoints plus a key prefix). Setup that only the
// parent must do (starting a server) can be skipped with IsChild. Children report on stdout and through
// their exit status; their stderr is shown when one fails.
package oduflowtest
