package etcdstore

import (
	"bytes"
	"strconv"

	"github.com/oduflow/oduflow-go/oduflow"
)

// Fencing tokens. The token of a dispatch intent is the revision of the transaction that records it
// (CompareAndSwapHeld from phase claimed to dispatching): etcd revisions strictly increase across the
// whole cluster, so a client's tokens do too, whichever replica or process issued them, with no key,
// counter or extra round trip of their own. A transaction cannot write its own revision into the value
// it puts, so the intent's record holds a placeholder, fence_token = 2^53 (one above
// oduflow.MaxFenceToken, so never a token), and a reader replaces it by the record's mod revision
// (withFenceToken), which is the intent's revision until the claim's next write. Every later write
// carries the token from the record it replaces (compareAndSwap fences on that record's mod revision, so
// the first write after the intent reads exactly the intent's revision) and stores it as a number.
// Claims dispatched before fencing (or through a plain CompareAndSwap) have no token and get none.
const fenceTokenPending = oduflow.MaxFenceToken + 1

// pendingFenceField is the placeholder as MarshalBinary writes it between two fields of a claim. Quotes
// inside a JSON string are escaped, so these bytes can only be the field itself (the strict decode
// refuses a repeated one).
var pendingFenceField = []byte(`,"fence_token":` + strconv.FormatUint(fenceTokenPending, 10) + `,`)

// withFenceToken returns the stored claim data with a pending token replaced by modRevision.
func withFenceToken(data []byte, modRevision int64) []byte {
	if modRevision <= 0 || !bytes.Contains(data, pendingFenceField) {
		return data
	}
	return bytes.Replace(data, pendingFenceField,
		[]byte(`,"fence_token":`+strconv.FormatInt(modRevision, 10)+`,`), 1)
}
