package salttest

// omap is an insertion-ordered map, the shape of a Python dict. Salt's replies and events keep
// the insertion order of the master's dicts; the simulator reproduces it so that captured and
// simulated documents can be compared key by key.
type omap struct {
	keys []any
	vals []any
}

func newOmap(kv ...any) *omap {
	n := len(kv)/2 + 3 // room for a few more keys (out, metadata, _stamp) without growing
	m := &omap{keys: make([]any, 0, n), vals: make([]any, 0, n)}
	for i := 0; i+1 < len(kv); i += 2 {
		m.set(kv[i].(string), kv[i+1])
	}
	return m
}

func (m *omap) index(k string) int {
	for i, key := range m.keys {
		if s, ok := key.(string); ok && s == k {
			return i
		}
	}
	return -1
}

func (m *omap) get(k string) (any, bool) {
	if m == nil {
		return nil, false
	}
	if i := m.index(k); i >= 0 {
		return m.vals[i], true
	}
	return nil, false
}

func (m *omap) str(k string) (string, bool) {
	v, ok := m.get(k)
	if !ok {
		return "", false
	}
	s, ok := v.(string)
	return s, ok
}

func (m *omap) has(k string) bool { return m != nil && m.index(k) >= 0 }

func (m *omap) set(k string, v any) {
	if i := m.index(k); i >= 0 {
		m.vals[i] = v
		return
	}
	m.keys = append(m.keys, k)
	m.vals = append(m.vals, v)
}

func (m *omap) del(k string) {
	if i := m.index(k); i >= 0 {
		m.keys = append(m.keys[:i:i], m.keys[i+1:]...)
		m.vals = append(m.vals[:i:i], m.vals[i+1:]...)
	}
}

func (m *omap) clone() *omap {
	if m == nil {
		return &omap{}
	}
	return &omap{keys: append([]any(nil), m.keys...), vals: append([]any(nil), m.vals...)}
}

func (m *omap) len() int {
	if m == nil {
		return 0
	}
	return len(m.keys)
}
