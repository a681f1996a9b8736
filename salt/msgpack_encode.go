package salt

import (
	"encoding/binary"
	"math"
	"reflect"
	"sort"

	"github.com/cockroachdb/errors"
)

// orderedMap is a msgpack map whose keys are encoded in insertion order, as
// Python dicts are. Salt's request loads are built with it so that the bytes
// match what Salt's own LocalClient sends.
type orderedMap struct {
	keys []string
	vals map[string]any
}

// newOrderedMap returns an empty ordered map.
func newOrderedMap() *orderedMap {
	return &orderedMap{vals: map[string]any{}}
}

// newOrderedMapCap returns an empty ordered map with room for n keys (a load
// whose keys are known: no growth of its key list and map while it is built).
func newOrderedMapCap(n int) *orderedMap {
	return &orderedMap{keys: make([]string, 0, n), vals: make(map[string]any, n)}
}

// Set adds or replaces key. A new key goes to the end; an existing key keeps
// its position (Python dict semantics).
func (m *orderedMap) Set(key string, v any) *orderedMap {
	if _, ok := m.vals[key]; !ok {
		m.keys = append(m.keys, key)
	}
	m.vals[key] = v
	return m
}

// Get returns the value of key.
func (m *orderedMap) Get(key string) (any, bool) {
	v, ok := m.vals[key]
	return v, ok
}

// Keys returns the keys in insertion order.
func (m *orderedMap) Keys() []string { return append([]string(nil), m.keys...) }

// Len returns the number of entries.
func (m *orderedMap) Len() int { return len(m.keys) }

// maxEncodeDepth bounds nesting so that a cyclic value cannot recurse forever.
const maxEncodeDepth = 100

// encodeSalt encodes v the way Salt's request channel does
// (salt.payload.dumps, msgpack-python with use_bin_type=False):
//   - strings AND byte slices use the old str family only: fixstr, str16,
//     str32 (never str8, never bin);
//   - integers use the smallest encoding; non-negative values use the
//     positive fixint / uint family, negative ones the negative fixint / int
//     family;
//   - floats are always float64;
//   - maps keep the insertion order of an *orderedMap; plain Go maps are
//     encoded with sorted keys so that output is deterministic.
func encodeSalt(v any) ([]byte, error) {
	e := &saltEncoder{buf: make([]byte, 0, 256)}
	if err := e.encode(v, 0); err != nil {
		return nil, err
	}
	return e.buf, nil
}

type saltEncoder struct {
	buf []byte
}

func (e *saltEncoder) encode(v any, depth int) error {
	if depth > maxEncodeDepth {
		return errors.Wrap(errUnsupportedType, "nesting too deep")
	}
	switch x := v.(type) {
	case nil:
		e.buf = append(e.buf, 0xc0)
	case bool:
		if x {
			e.buf = append(e.buf, 0xc3)
		} else {
			e.buf = append(e.buf, 0xc2)
		}
	case string:
		e.str(x)
	case []byte:
		e.str(string(x))
	case JID:
		e.str(string(x))
	case int:
		e.int(int64(x))
	case int8:
		e.int(int64(x))
	case int16:
		e.int(int64(x))
	case int32:
		e.int(int64(x))
	case int64:
		e.int(x)
	case uint:
		e.uint(uint64(x))
	case uint8:
		e.uint(uint64(x))
	case uint16:
		e.uint(uint64(x))
	case uint32:
		e.uint(uint64(x))
	case uint64:
		e.uint(x)
	case float32:
		e.float(float64(x))
	case float64:
		e.float(x)
	case *orderedMap:
		if x == nil {
			e.buf = append(e.buf, 0xc0)
			return nil
		}
		e.mapHeader(len(x.keys))
		for _, k := range x.keys {
			e.str(k)
			if err := e.encode(x.vals[k], depth+1); err != nil {
				return err
			}
		}
	case []any:
		e.arrayHeader(len(x))
		for _, it := range x {
			if err := e.encode(it, depth+1); err != nil {
				return err
			}
		}
	case []string:
		e.arrayHeader(len(x))
		for _, it := range x {
			e.str(it)
		}
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		e.mapHeader(len(keys))
		for _, k := range keys {
			e.str(k)
			if err := e.encode(x[k], depth+1); err != nil {
				return err
			}
		}
	default:
		return e.reflectValue(reflect.ValueOf(v), depth)
	}
	return nil
}

// reflectValue handles other slices and string-keyed maps ([]int,
// map[string]string, ...). Structs, pointers, channels, etc. are refused.
func (e *saltEncoder) reflectValue(rv reflect.Value, depth int) error {
	switch rv.Kind() {
	case reflect.Slice, reflect.Array:
		if rv.Kind() == reflect.Slice && rv.IsNil() {
			e.buf = append(e.buf, 0xc0)
			return nil
		}
		n := rv.Len()
		e.arrayHeader(n)
		for i := 0; i < n; i++ {
			if err := e.encode(rv.Index(i).Interface(), depth+1); err != nil {
				return err
			}
		}
		return nil
	case reflect.Map:
		if rv.Type().Key().Kind() != reflect.String {
			return errors.Wrapf(errUnsupportedType, "map key type %s", errors.Safe(rv.Type().Key().String()))
		}
		if rv.IsNil() {
			e.buf = append(e.buf, 0xc0)
			return nil
		}
		keys := rv.MapKeys()
		sort.Slice(keys, func(i, j int) bool { return keys[i].String() < keys[j].String() })
		e.mapHeader(len(keys))
		for _, k := range keys {
			e.str(k.String())
			if err := e.encode(rv.MapIndex(k).Interface(), depth+1); err != nil {
				return err
			}
		}
		return nil
	case reflect.String:
		e.str(rv.String())
		return nil
	case reflect.Bool:
		return e.encode(rv.Bool(), depth)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		e.int(rv.Int())
		return nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		e.uint(rv.Uint())
		return nil
	case reflect.Float32, reflect.Float64:
		e.float(rv.Float())
		return nil
	}
	if !rv.IsValid() {
		e.buf = append(e.buf, 0xc0)
		return nil
	}
	return errors.Wrapf(errUnsupportedType, "type %s", errors.Safe(rv.Type().String()))
}

func (e *saltEncoder) str(s string) {
	n := len(s)
	switch {
	case n < 32:
		e.buf = append(e.buf, 0xa0|byte(n))
	case n <= math.MaxUint16:
		e.buf = append(e.buf, 0xda, byte(n>>8), byte(n))
	default:
		e.buf = append(e.buf, 0xdb)
		e.buf = binary.BigEndian.AppendUint32(e.buf, uint32(n))
	}
	e.buf = append(e.buf, s...)
}

func (e *saltEncoder) arrayHeader(n int) { e.containerHeader(n, 0x90, 0xdc, 0xdd) }

func (e *saltEncoder) mapHeader(n int) { e.containerHeader(n, 0x80, 0xde, 0xdf) }

// containerHeader writes an array or map header: the fix form below 16 items,
// else the 16-bit or 32-bit length form.
func (e *saltEncoder) containerHeader(n int, fix, len16, len32 byte) {
	switch {
	case n < 16:
		e.buf = append(e.buf, fix|byte(n))
	case n <= math.MaxUint16:
		e.buf = append(e.buf, len16, byte(n>>8), byte(n))
	default:
		e.buf = append(e.buf, len32)
		e.buf = binary.BigEndian.AppendUint32(e.buf, uint32(n))
	}
}

func (e *saltEncoder) int(i int64) {
	if i >= 0 {
		e.uint(uint64(i))
		return
	}
	switch {
	case i >= -32:
		e.buf = append(e.buf, byte(int8(i)))
	case i >= math.MinInt8:
		e.buf = append(e.buf, 0xd0, byte(int8(i)))
	case i >= math.MinInt16:
		e.buf = append(e.buf, 0xd1)
		e.buf = binary.BigEndian.AppendUint16(e.buf, uint16(int16(i)))
	case i >= math.MinInt32:
		e.buf = append(e.buf, 0xd2)
		e.buf = binary.BigEndian.AppendUint32(e.buf, uint32(int32(i)))
	default:
		e.buf = append(e.buf, 0xd3)
		e.buf = binary.BigEndian.AppendUint64(e.buf, uint64(i))
	}
}

func (e *saltEncoder) uint(u uint64) {
	switch {
	case u <= 0x7f:
		e.buf = append(e.buf, byte(u))
	case u <= math.MaxUint8:
		e.buf = append(e.buf, 0xcc, byte(u))
	case u <= math.MaxUint16:
		e.buf = append(e.buf, 0xcd)
		e.buf = binary.BigEndian.AppendUint16(e.buf, uint16(u))
	case u <= math.MaxUint32:
		e.buf = append(e.buf, 0xce)
		e.buf = binary.BigEndian.AppendUint32(e.buf, uint32(u))
	default:
		e.buf = append(e.buf, 0xcf)
		e.buf = binary.BigEndian.AppendUint64(e.buf, u)
	}
}

func (e *saltEncoder) float(f float64) {
	e.buf = append(e.buf, 0xcb)
	e.buf = binary.BigEndian.AppendUint64(e.buf, math.Float64bits(f))
}

// encodeValue encodes v in the msgpack dialect of Salt's request channel
// (see encodeSalt). Use *orderedMap for maps whose key order matters.
func encodeValue(v any) ([]byte, error) { return encodeSalt(v) }
