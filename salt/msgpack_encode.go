package salt

import "github.com/oduflow/oduflow-go/internal/saltwire"

// orderedMap is a msgpack map whose keys are encoded in insertion order, as Python dicts are.
// Salt's request loads are built with it so that the bytes match what Salt's own LocalClient
// sends.
type orderedMap = saltwire.OrderedMap

// newOrderedMap returns an empty ordered map.
func newOrderedMap() *orderedMap { return saltwire.NewOrderedMap(8) }

// newOrderedMapCap returns an empty ordered map with room for n keys (a load whose keys are
// known: no growth of its key list while it is built).
func newOrderedMapCap(n int) *orderedMap { return saltwire.NewOrderedMap(n) }

// encodeSalt encodes v the way Salt's request channel does (salt.payload.dumps, msgpack-python
// with use_bin_type=False: saltwire.Request): strings and byte slices in the old str family
// only, integers in their smallest form, floats as float64, an *orderedMap in its order, Go maps
// with sorted keys.
func encodeSalt(v any) ([]byte, error) { return saltwire.Marshal(saltwire.Request, v) }

// encodeValue encodes v in the msgpack dialect of Salt's request channel (see encodeSalt). Use
// *orderedMap for maps whose key order matters.
func encodeValue(v any) ([]byte, error) { return encodeSalt(v) }
