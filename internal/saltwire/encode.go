package saltwire

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

// Dialect is one of the two ways Salt packs msgpack (salt.payload.dumps over msgpack-python).
// The captured vectors are the oracle for both, byte for byte.
type Dialect uint8

const (
	// Request is the request channel's dialect (use_bin_type=False), in both directions: every
	// string and every byte slice is in the old str family, fixstr, str16 or str32, never str8
	// and never bin.
	Request Dialect = iota
	// Event is the event bus's dialect (use_bin_type=True), the current msgpack spec: strings
	// use fixstr, str8, str16 or str32; byte slices, and strings that are not UTF-8 (a Python
	// bytes value, not text), use bin.
	Event
)

// maxEncodeDepth bounds nesting so that a cyclic value cannot recurse forever.
const maxEncodeDepth = 100

// datetimeOut is what Salt writes into ext 78 (microseconds always present).
const datetimeOut = "20060102T15:04:05.000000"

// Append appends v to dst in dialect d and returns the extended slice. In both dialects:
//
//   - integers use the smallest encoding: non-negative values the positive fixint / uint
//     family, negative ones the negative fixint / int family (as msgpack-python packs ints);
//   - floats are always float64 (a Python float is a double);
//   - a time.Time is Salt's ext 78 (an ASCII datetime), an Ext is written back as it came;
//   - an *OrderedMap keeps its order; a Go map is written with its keys sorted (by their
//     text), so that output is deterministic;
//   - other slices, arrays and maps, and non-nil pointers, go through reflection; structs,
//     channels, functions and nesting deeper than 100 fail with ErrUnsupportedType.
//
// On error dst may hold a partial document: callers drop it.
func Append(dst []byte, d Dialect, v any) ([]byte, error) {
	e := encoder{buf: dst, dialect: d}
	if err := e.encode(v, 0); err != nil {
		return dst, err
	}
	return e.buf, nil
}

// Marshal is Append to a new slice.
func Marshal(d Dialect, v any) ([]byte, error) { return Append(make([]byte, 0, 256), d, v) }

type encoder struct {
	buf     []byte
	dialect Dialect
}

func (e *encoder) encode(v any, depth int) error {
	if depth > maxEncodeDepth {
		return errors.Wrap(ErrUnsupportedType, "nesting too deep")
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
	case float32:
		e.float(float64(x))
	case float64:
		e.float(x)
	case time.Time:
		e.ext(78, []byte(x.Format(datetimeOut)))
	case Ext:
		e.ext(x.Type, x.Data)
	case *OrderedMap:
		if x == nil {
			e.buf = append(e.buf, 0xc0)
			return nil
		}
		e.containerHeader(len(x.Keys), 0x80, 0xde, 0xdf)
		for i, k := range x.Keys {
			if err := e.encode(k, depth+1); err != nil {
				return err
			}
			if err := e.encode(x.Vals[i], depth+1); err != nil {
				return err
			}
		}
	case []any:
		e.containerHeader(len(x), 0x90, 0xdc, 0xdd)
		for _, it := range x {
			if err := e.encode(it, depth+1); err != nil {
				return err
			}
		}
	case []string:
		e.containerHeader(len(x), 0x90, 0xdc, 0xdd)
		for _, it := range x {
			e.str(it)
		}
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		e.containerHeader(len(keys), 0x80, 0xde, 0xdf)
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

// reflectValue handles the remaining kinds: other slices and maps ([]int, map[string]string,
// []map[string]any), named strings and numbers, pointers.
func (e *encoder) reflectValue(rv reflect.Value, depth int) error {
	switch rv.Kind() {
	case reflect.Slice, reflect.Array:
		if rv.Kind() == reflect.Slice && rv.IsNil() {
			e.buf = append(e.buf, 0xc0)
			return nil
		}
		n := rv.Len()
		e.containerHeader(n, 0x90, 0xdc, 0xdd)
		for i := 0; i < n; i++ {
			if err := e.encode(rv.Index(i).Interface(), depth+1); err != nil {
				return err
			}
		}
		return nil
	case reflect.Map:
		if rv.IsNil() {
			e.buf = append(e.buf, 0xc0)
			return nil
		}
		keys := rv.MapKeys()
		text := make([]string, len(keys))
		for i, k := range keys {
			text[i] = fmt.Sprint(k.Interface())
		}
		order := make([]int, len(keys))
		for i := range order {
			order[i] = i
		}
		sort.SliceStable(order, func(a, b int) bool { return text[order[a]] < text[order[b]] })
		e.containerHeader(len(keys), 0x80, 0xde, 0xdf)
		for _, i := range order {
			if err := e.encode(keys[i].Interface(), depth+1); err != nil {
				return err
			}
			if err := e.encode(rv.MapIndex(keys[i]).Interface(), depth+1); err != nil {
				return err
			}
		}
		return nil
	case reflect.Pointer:
		if rv.IsNil() {
			e.buf = append(e.buf, 0xc0)
			return nil
		}
		return e.encode(rv.Elem().Interface(), depth+1)
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
	return errors.Wrapf(ErrUnsupportedType, "type %s", errors.Safe(rv.Type().String()))
}

func (e *encoder) str(s string) {
	if e.dialect == Request {
		e.oldStr(s)
		return
	}
	if !utf8.ValidString(s) {
		e.binHeader(len(s))
		e.buf = append(e.buf, s...)
		return
	}
	switch n := len(s); {
	case n < 32:
		e.buf = append(e.buf, 0xa0|byte(n))
	case n <= math.MaxUint8:
		e.buf = append(e.buf, 0xd9, byte(n))
	case n <= math.MaxUint16:
		e.buf = append(e.buf, 0xda, byte(n>>8), byte(n))
	default:
		e.buf = append(e.buf, 0xdb)
		e.buf = binary.BigEndian.AppendUint32(e.buf, uint32(n))
	}
	e.buf = append(e.buf, s...)
}

// oldStr writes the old spec's str family: fixstr, str16 or str32, never str8.
func (e *encoder) oldStr(s string) {
	switch n := len(s); {
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

func (e *encoder) bin(b []byte) {
	if e.dialect == Request {
		e.oldStr(string(b))
		return
	}
	e.binHeader(len(b))
	e.buf = append(e.buf, b...)
}

func (e *encoder) binHeader(n int) { e.buf = AppendBinHeader(e.buf, n) }

// AppendBinHeader appends the header of a bin value of n bytes (an event frame's body is one,
// written around bytes already in place).
func AppendBinHeader(dst []byte, n int) []byte {
	switch {
	case n <= math.MaxUint8:
		return append(dst, 0xc4, byte(n))
	case n <= math.MaxUint16:
		return append(dst, 0xc5, byte(n>>8), byte(n))
	}
	return binary.BigEndian.AppendUint32(append(dst, 0xc6), uint32(n))
}

func (e *encoder) ext(typ int8, data []byte) {
	switch n := len(data); {
	case n == 1:
		e.buf = append(e.buf, 0xd4)
	case n == 2:
		e.buf = append(e.buf, 0xd5)
	case n == 4:
		e.buf = append(e.buf, 0xd6)
	case n == 8:
		e.buf = append(e.buf, 0xd7)
	case n == 16:
		e.buf = append(e.buf, 0xd8)
	case n <= math.MaxUint8:
		e.buf = append(e.buf, 0xc7, byte(n))
	case n <= math.MaxUint16:
		e.buf = append(e.buf, 0xc8, byte(n>>8), byte(n))
	default:
		e.buf = append(e.buf, 0xc9)
		e.buf = binary.BigEndian.AppendUint32(e.buf, uint32(n))
	}
	e.buf = append(e.buf, byte(typ))
	e.buf = append(e.buf, data...)
}

// containerHeader writes an array or map header: the fix form below 16 items, else the 16-bit
// or 32-bit length form.
func (e *encoder) containerHeader(n int, fix, len16, len32 byte) {
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

func (e *encoder) int(i int64) {
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

func (e *encoder) uint(u uint64) {
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

func (e *encoder) float(f float64) {
	e.buf = append(e.buf, 0xcb)
	e.buf = binary.BigEndian.AppendUint64(e.buf, math.Float64bits(f))
}
