package claims_test

import (
	"errors"
	"fmt"

	"github.com/oduflow/oduflow-go/oduflow/claims"
)

// A stored claim read back: Decode (or UnmarshalBinary) refuses a record with a repeated key, and
// accepts an earlier runner's spelling as a legacy claim.
func ExampleDecode() {
	legacy := []byte(`{"minion_id":"client-8d5c6a1e-9a65-4c2a-b6a7-2f0e3c1d4b5a",` +
		`"request_id":"4f9d2a7e-3b1c-4d5e-8f6a-7b8c9d0e1f2a","jid":"20261201000000000000",` +
		`"state":"dispatched","created":1764547200,"error":"raw text never kept"}`)
	c, err := claims.Decode(legacy)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(c.Legacy(), c.Phase == claims.PhaseDispatched, c.ErrorCode == claims.CodeLegacyError, c.Quarantining())
	data, err := c.MarshalBinary()
	if err != nil {
		fmt.Println(err)
		return
	}
	_, err = claims.Decode(append(data[:len(data)-2], `,"phase":"claimed"}`...))
	fmt.Println(errors.Is(err, claims.ErrCorruptClaim))
	// Output:
	// true true true true
	// true
}

// Which optional capabilities a store has: the Dispatcher asserts each at New and uses the ones it finds
// (the package documentation says what it does without each).
func Example_capabilities() {
	var st claims.Store = memoryless{}
	_, lockReader := st.(claims.ClaimLockReader)
	_, windowed := st.(claims.WindowedStore)
	_, lister := st.(claims.UnresolvedLister)
	_, scanner := st.(claims.UnresolvedScanner)
	fmt.Println(lockReader, windowed, lister, scanner)
	// Output: false false false false
}

// memoryless is a Store with no optional capability (every call fails: only its type matters here).
type memoryless struct {
	claims.ClaimStore
	claims.Leases
}
