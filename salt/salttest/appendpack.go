package salttest

import (
	"encoding/binary"
	"math"
	"unicode/utf8"
)

// appendEvent is packEvent's fast path: it appends v in the event-bus dialect (the current
// msgpack spec, exactly the bytes packer writes through msgpack/v5) to b, without an encoder,
// a bytes.Buffer or reflection. It covers the values events are made of (nil, bools, strings,
// bytes, integers, floats, ordered maps, []any, []string, map[string]any); for anything else,
// or nesting beyond maxDepth, it reports false and the caller asks packer, which gives the
// value's bytes or the canonical error. TestAppendEventMatchesPacker holds the two equal.
func appendEvent(b []byte, v any) ([]byte, bool) { return appendEventDepth(b, v, 1) }

func appendEventDepth(b []byte, v any, depth int) ([]byte, bool) {
	if depth > maxDepth {
		return b, false
	}
	switch x := v.(type) {
	case nil:
		return append(b, 0xc0), true
	case bool:
		if x {
			return append(b, 0xc3), true
		}
		return append(b, 0xc2), true
	case string:
		return appendEventStr(b, x), true
	case []byte:
		return append(appendBinHeader(b, len(x)), x...), true
	case int:
		return appendInt(b, int64(x)), true
	case int8:
		return appendInt(b, int64(x)), true
	case int16:
		return appendInt(b, int64(x)), true
	case int32:
		return appendInt(b, int64(x)), true
	case int64:
		return appendInt(b, x), true
	case uint:
		return appendUint(b, uint64(x)), true
	case uint8:
		return appendUint(b, uint64(x)), true
	case uint16:
		return appendUint(b, uint64(x)), true
	case uint32:
		return appendUint(b, uint64(x)), true
	case uint64:
		return appendUint(b, x), true
	case float64:
		return binary.BigEndian.AppendUint64(append(b, 0xcb), math.Float64bits(x)), true
	case float32:
		return binary.BigEndian.AppendUint64(append(b, 0xcb), math.Float64bits(float64(x))), true
	case *omap:
		b = appendCollHeader(b, x.len(), 0x80, 0xde)
		if x == nil {
			return b, true
		}
		for i := range x.keys {
			var ok bool
			if b, ok = appendEventDepth(b, x.keys[i], depth+1); !ok {
				return b, false
			}
			if b, ok = appendEventDepth(b, x.vals[i], depth+1); !ok {
				return b, false
			}
		}
		return b, true
	case []any:
		b = appendCollHeader(b, len(x), 0x90, 0xdc)
		for _, el := range x {
			var ok bool
			if b, ok = appendEventDepth(b, el, depth+1); !ok {
				return b, false
			}
		}
		return b, true
	case []string:
		b = appendCollHeader(b, len(x), 0x90, 0xdc)
		for _, el := range x { // packer writes these without a level of its own
			b = appendEventStr(b, el)
		}
		return b, true
	case map[string]any:
		b = appendCollHeader(b, len(x), 0x80, 0xde)
		for _, k := range sortedKeys(x) {
			b = appendEventStr(b, k)
			var ok bool
			if b, ok = appendEventDepth(b, x[k], depth+1); !ok {
				return b, false
			}
		}
		return b, true
	}
	return b, false
}

// appendEventStr is packer.str in the current spec: text as str (str8 for 32-255 bytes), a
// string that is not UTF-8 (a Python bytes value) as bin.
func appendEventStr(b []byte, s string) []byte {
	if !utf8.ValidString(s) {
		return append(appendBinHeader(b, len(s)), s...)
	}
	switch n := len(s); {
	case n < 32:
		b = append(b, 0xa0|byte(n))
	case n < 256:
		b = append(b, 0xd9, byte(n))
	case n <= math.MaxUint16:
		b = binary.BigEndian.AppendUint16(append(b, 0xda), uint16(n))
	default:
		b = binary.BigEndian.AppendUint32(append(b, 0xdb), uint32(n))
	}
	return append(b, s...)
}

func appendBinHeader(b []byte, n int) []byte {
	switch {
	case n < 256:
		return append(b, 0xc4, byte(n))
	case n <= math.MaxUint16:
		return binary.BigEndian.AppendUint16(append(b, 0xc5), uint16(n))
	}
	return binary.BigEndian.AppendUint32(append(b, 0xc6), uint32(n))
}

// appendCollHeader is a map or array header: fix (fix|n below 16), 16-bit (code16) or 32-bit
// (code16+1) length.
func appendCollHeader(b []byte, n int, fix, code16 byte) []byte {
	switch {
	case n < 16:
		return append(b, fix|byte(n))
	case n <= math.MaxUint16:
		return binary.BigEndian.AppendUint16(append(b, code16), uint16(n))
	}
	return binary.BigEndian.AppendUint32(append(b, code16+1), uint32(n))
}

// appendInt is msgpack/v5's EncodeInt: the smallest form.
func appendInt(b []byte, n int64) []byte {
	switch {
	case n >= 0:
		return appendUint(b, uint64(n))
	case n >= -32:
		return append(b, byte(n))
	case n >= math.MinInt8:
		return append(b, 0xd0, byte(n))
	case n >= math.MinInt16:
		return binary.BigEndian.AppendUint16(append(b, 0xd1), uint16(n))
	case n >= math.MinInt32:
		return binary.BigEndian.AppendUint32(append(b, 0xd2), uint32(n))
	}
	return binary.BigEndian.AppendUint64(append(b, 0xd3), uint64(n))
}

// appendUint is msgpack/v5's EncodeUint: the smallest form.
func appendUint(b []byte, n uint64) []byte {
	switch {
	case n <= math.MaxInt8:
		return append(b, byte(n))
	case n <= math.MaxUint8:
		return append(b, 0xcc, byte(n))
	case n <= math.MaxUint16:
		return binary.BigEndian.AppendUint16(append(b, 0xcd), uint16(n))
	case n <= math.MaxUint32:
		return binary.BigEndian.AppendUint32(append(b, 0xce), uint32(n))
	}
	return binary.BigEndian.AppendUint64(append(b, 0xcf), n)
}
