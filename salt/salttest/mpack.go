package salttest

import (
	"encoding/binary"
	"fmt"
	"math"
	"reflect"
	"sort"
	"time"
	"unicode/utf8"

	"github.com/cockroachdb/errors"
)

// omap is an insertion-ordered map, the shape of a Python dict. Salt's replies and events keep
// the insertion order of the master's dicts; the simulator reproduces it so that captured and
// simulated documents can be compared key by key.
type omap struct {
	keys []any
	vals []any
}

func newOmap(kv ...any) *omap {
	m := &omap{}
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

// encoder packs Go values the way Salt's msgpack-python packer does. With binType false it is
// Salt's request-channel dialect (use_bin_type=False): every string and every byte slice uses
// the old str family (fixstr, str16, str32; never str8, never bin). With binType true it is the
// event-bus dialect (use_bin_type=True): str8 exists and byte slices are bin.
type encoder struct {
	buf     []byte
	binType bool
	depth   int
}

var errUnsupportedType = errors.New("salttest: value cannot be encoded as msgpack")

const maxDepth = 100

func packSalt(v any) ([]byte, error) {
	e := &encoder{}
	err := e.encode(v)
	return e.buf, err
}

func packEvent(v any) ([]byte, error) {
	e := &encoder{binType: true}
	err := e.encode(v)
	return e.buf, err
}

func (e *encoder) u8(b byte) { e.buf = append(e.buf, b) }

func (e *encoder) u16(c byte, n uint16) {
	e.buf = append(e.buf, c)
	e.buf = binary.BigEndian.AppendUint16(e.buf, n)
}

func (e *encoder) u32(c byte, n uint32) {
	e.buf = append(e.buf, c)
	e.buf = binary.BigEndian.AppendUint32(e.buf, n)
}

func (e *encoder) str(s string) {
	if e.binType && !utf8.ValidString(s) {
		e.bin([]byte(s))
		return
	}
	n := len(s)
	switch {
	case n < 32:
		e.u8(0xa0 | byte(n))
	case e.binType && n < 256:
		e.buf = append(e.buf, 0xd9, byte(n))
	case n < 65536:
		e.u16(0xda, uint16(n))
	default:
		e.u32(0xdb, uint32(n))
	}
	e.buf = append(e.buf, s...)
}

func (e *encoder) bin(b []byte) {
	if !e.binType {
		e.str(string(b))
		return
	}
	n := len(b)
	switch {
	case n < 256:
		e.buf = append(e.buf, 0xc4, byte(n))
	case n < 65536:
		e.u16(0xc5, uint16(n))
	default:
		e.u32(0xc6, uint32(n))
	}
	e.buf = append(e.buf, b...)
}

func (e *encoder) int(n int64) {
	if n >= 0 {
		e.uint(uint64(n))
		return
	}
	switch {
	case n >= -32:
		e.u8(byte(int8(n)))
	case n >= math.MinInt8:
		e.buf = append(e.buf, 0xd0, byte(int8(n)))
	case n >= math.MinInt16:
		e.u16(0xd1, uint16(int16(n)))
	case n >= math.MinInt32:
		e.u32(0xd2, uint32(int32(n)))
	default:
		e.u8(0xd3)
		e.buf = binary.BigEndian.AppendUint64(e.buf, uint64(n))
	}
}

func (e *encoder) uint(n uint64) {
	switch {
	case n < 128:
		e.u8(byte(n))
	case n < 256:
		e.buf = append(e.buf, 0xcc, byte(n))
	case n < 65536:
		e.u16(0xcd, uint16(n))
	case n < 1<<32:
		e.u32(0xce, uint32(n))
	default:
		e.u8(0xcf)
		e.buf = binary.BigEndian.AppendUint64(e.buf, n)
	}
}

func (e *encoder) ext(x extValue) {
	n := len(x.Data)
	switch n {
	case 1, 2, 4, 8, 16:
		codes := map[int]byte{1: 0xd4, 2: 0xd5, 4: 0xd6, 8: 0xd7, 16: 0xd8}
		e.u8(codes[n])
	default:
		switch {
		case n < 256:
			e.buf = append(e.buf, 0xc7, byte(n))
		case n < 65536:
			e.u16(0xc8, uint16(n))
		default:
			e.u32(0xc9, uint32(n))
		}
	}
	e.buf = append(e.buf, byte(x.Type))
	e.buf = append(e.buf, x.Data...)
}

func (e *encoder) arrayHeader(n int) {
	switch {
	case n < 16:
		e.u8(0x90 | byte(n))
	case n < 65536:
		e.u16(0xdc, uint16(n))
	default:
		e.u32(0xdd, uint32(n))
	}
}

func (e *encoder) mapHeader(n int) {
	switch {
	case n < 16:
		e.u8(0x80 | byte(n))
	case n < 65536:
		e.u16(0xde, uint16(n))
	default:
		e.u32(0xdf, uint32(n))
	}
}

func (e *encoder) encode(v any) error {
	e.depth++
	defer func() { e.depth-- }()
	if e.depth > maxDepth {
		return errors.Wrap(errUnsupportedType, "nesting too deep")
	}
	switch x := v.(type) {
	case nil:
		e.u8(0xc0)
	case bool:
		if x {
			e.u8(0xc3)
		} else {
			e.u8(0xc2)
		}
	case string:
		e.str(x)
	case []byte:
		e.bin(x)
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
	case float64:
		e.u8(0xcb)
		e.buf = binary.BigEndian.AppendUint64(e.buf, math.Float64bits(x))
	case float32:
		e.u8(0xcb)
		e.buf = binary.BigEndian.AppendUint64(e.buf, math.Float64bits(float64(x)))
	case time.Time:
		// Salt packs datetimes as ext 78 with an ASCII payload.
		p := x.Format("20060102T15:04:05.000000")
		e.buf = append(e.buf, 0xc7, byte(len(p)), 78)
		e.buf = append(e.buf, p...)
	case extValue:
		e.ext(x)
	case *omap:
		e.mapHeader(x.len())
		if x != nil {
			for i := range x.keys {
				if err := e.encode(x.keys[i]); err != nil {
					return err
				}
				if err := e.encode(x.vals[i]); err != nil {
					return err
				}
			}
		}
	case []any:
		e.arrayHeader(len(x))
		for _, el := range x {
			if err := e.encode(el); err != nil {
				return err
			}
		}
	case []string:
		e.arrayHeader(len(x))
		for _, el := range x {
			e.str(el)
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
			if err := e.encode(x[k]); err != nil {
				return err
			}
		}
	default:
		return e.encodeReflect(v)
	}
	return nil
}

// encodeReflect handles the remaining slices and maps (for example []map[string]any or
// map[string]string) that handlers may return.
func (e *encoder) encodeReflect(v any) error {
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Slice, reflect.Array:
		e.arrayHeader(rv.Len())
		for i := 0; i < rv.Len(); i++ {
			if err := e.encode(rv.Index(i).Interface()); err != nil {
				return err
			}
		}
		return nil
	case reflect.Map:
		keys := rv.MapKeys()
		sort.Slice(keys, func(i, j int) bool {
			return fmt.Sprint(keys[i].Interface()) < fmt.Sprint(keys[j].Interface())
		})
		e.mapHeader(len(keys))
		for _, k := range keys {
			if err := e.encode(k.Interface()); err != nil {
				return err
			}
			if err := e.encode(rv.MapIndex(k).Interface()); err != nil {
				return err
			}
		}
		return nil
	case reflect.Pointer:
		if rv.IsNil() {
			e.u8(0xc0)
			return nil
		}
		return e.encode(rv.Elem().Interface())
	case reflect.String:
		e.str(rv.String())
		return nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		e.int(rv.Int())
		return nil
	case reflect.Bool:
		return e.encode(rv.Bool())
	}
	return errors.Wrapf(errUnsupportedType, "type %s", errors.Safe(rv.Type().String()))
}
