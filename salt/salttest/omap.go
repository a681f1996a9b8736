package salttest

import "github.com/oduflow/oduflow-go/internal/saltwire"

// omap is an insertion-ordered map, the shape of a Python dict (saltwire.OrderedMap, the wire's
// own). Salt's replies and events keep the insertion order of the master's dicts; the simulator
// reproduces it so that captured and simulated documents can be compared key by key.
type omap = saltwire.OrderedMap

func newOmap(kv ...any) *omap {
	n := len(kv)/2 + 3 // room for a few more keys (out, metadata, _stamp) without growing
	m := saltwire.NewOrderedMap(n)
	for i := 0; i+1 < len(kv); i += 2 {
		m.Set(kv[i].(string), kv[i+1])
	}
	return m
}
