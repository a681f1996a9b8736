package etcdstore

import "github.com/oduflow/oduflow-go/oduflow"

// Fencing tokens. The token of a dispatch intent is the revision of the transaction that records it
// (CompareAndSwapHeld from phase claimed to dispatching): etcd revisions strictly increase across the
// whole cluster, so a client's tokens do too, whichever replica or process issued them, with no key,
// counter or extra round trip of their own. A transaction cannot write its own revision into the value
// it puts, so the intent's record holds no fence_token field; it is the record's mod revision until
// the claim's next write, and every write carries it from the record it replaces (compareAndSwap fences
// on that record's mod revision, so the first write after the intent reads exactly the intent's
// revision and stores it). A reader therefore always sees the intent's token: fillFenceToken.
//
// A dispatched claim written before fencing existed has no token either; it gets its record's mod
// revision, which is at or after its publication. That value is only ever used to fence (a fence raises
// the minion's mark to at least the token and marks the JID never-to-run), never published, so a value
// later than the real intent is safe: every token issued afterwards is a later revision still.
func fillFenceToken(c *oduflow.Claim, modRevision int64) {
	if c.FenceToken == 0 && c.WasDispatched() && modRevision > 0 {
		c.FenceToken = uint64(modRevision)
	}
}
