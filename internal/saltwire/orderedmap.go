package saltwire

// OrderedMap is an insertion-ordered map, the shape of a Python dict. Salt's request loads, its
// replies and its events keep the insertion order of their dicts: the client builds its loads
// with it so that the bytes match what Salt's own LocalClient sends, and the simulator decodes
// into it (DecodeOrdered) so that captured and simulated documents compare key by key.
//
// Keys are strings for everything this package builds; a decoded map keeps whatever keys the
// wire had (Salt's returns have int keys). A repeated string key keeps its first position and
// takes the last value, as a Python dict does. The zero value and nil are empty maps for Get,
// Has and Len.
type OrderedMap struct {
	Keys []any
	Vals []any
}

// NewOrderedMap returns an empty map with room for n keys (a load whose keys are known: no
// growth while it is built).
func NewOrderedMap(n int) *OrderedMap {
	return &OrderedMap{Keys: make([]any, 0, n), Vals: make([]any, 0, n)}
}

// Index returns the position of string key k, or -1.
func (m *OrderedMap) Index(k string) int {
	if m == nil {
		return -1
	}
	for i, key := range m.Keys {
		if s, ok := key.(string); ok && s == k {
			return i
		}
	}
	return -1
}

// Get returns the value of string key k.
func (m *OrderedMap) Get(k string) (any, bool) {
	if i := m.Index(k); i >= 0 {
		return m.Vals[i], true
	}
	return nil, false
}

// Str returns the value of string key k if it is a string.
func (m *OrderedMap) Str(k string) (string, bool) {
	v, _ := m.Get(k)
	s, ok := v.(string)
	return s, ok
}

// Has reports whether string key k is present.
func (m *OrderedMap) Has(k string) bool { return m.Index(k) >= 0 }

// Set adds or replaces k: a new key goes to the end, an existing one keeps its position.
func (m *OrderedMap) Set(k string, v any) *OrderedMap {
	if i := m.Index(k); i >= 0 {
		m.Vals[i] = v
		return m
	}
	m.Keys = append(m.Keys, k)
	m.Vals = append(m.Vals, v)
	return m
}

// Del removes k, keeping the order of the others.
func (m *OrderedMap) Del(k string) {
	if i := m.Index(k); i >= 0 {
		m.Keys = append(m.Keys[:i:i], m.Keys[i+1:]...)
		m.Vals = append(m.Vals[:i:i], m.Vals[i+1:]...)
	}
}

// Clone returns a copy of the map's entries (the values are shared).
func (m *OrderedMap) Clone() *OrderedMap {
	if m == nil {
		return &OrderedMap{}
	}
	return &OrderedMap{Keys: append([]any(nil), m.Keys...), Vals: append([]any(nil), m.Vals...)}
}

// Len returns the number of entries.
func (m *OrderedMap) Len() int {
	if m == nil {
		return 0
	}
	return len(m.Keys)
}
