package receipt

import (
	"encoding/binary"
	"encoding/json"
	"testing"

	"github.com/vmihailenco/msgpack/v5"
)

// plausibleMsgpack reports whether every length header in data is backed by
// enough remaining bytes. vmihailenco/msgpack v5.4.1 preallocates
// make([]any, 0, n) for an array header claiming n elements before reading
// any of them, so a 5-byte array32 header can demand tens of GiB; the fuzz
// target skips such inputs (the decoder's problem, not Reduce's).
func plausibleMsgpack(data []byte) bool {
	pending := 1 // values still to read
	i := 0
	need := func(n int) bool { return n >= 0 && i+n <= len(data) }
	uintN := func(size int) (int, bool) {
		if !need(size) {
			return 0, false
		}
		var v uint64
		switch size {
		case 1:
			v = uint64(data[i])
		case 2:
			v = uint64(binary.BigEndian.Uint16(data[i:]))
		case 4:
			v = uint64(binary.BigEndian.Uint32(data[i:]))
		}
		i += size
		if v > uint64(len(data)) {
			return 0, false
		}
		return int(v), true
	}
	for pending > 0 {
		if i >= len(data) {
			return false
		}
		c := data[i]
		i++
		pending--
		skip, items := 0, 0
		var ok = true
		switch {
		case c <= 0x7f || c >= 0xe0 || c == 0xc0 || c == 0xc2 || c == 0xc3:
		case c >= 0x80 && c <= 0x8f:
			items = 2 * int(c&0x0f)
		case c >= 0x90 && c <= 0x9f:
			items = int(c & 0x0f)
		case c >= 0xa0 && c <= 0xbf:
			skip = int(c & 0x1f)
		case c == 0xc4 || c == 0xd9:
			skip, ok = uintN(1)
		case c == 0xc5 || c == 0xda:
			skip, ok = uintN(2)
		case c == 0xc6 || c == 0xdb:
			skip, ok = uintN(4)
		case c == 0xc7:
			skip, ok = uintN(1)
			skip++
		case c == 0xc8:
			skip, ok = uintN(2)
			skip++
		case c == 0xc9:
			skip, ok = uintN(4)
			skip++
		case c == 0xca:
			skip = 4
		case c == 0xcb:
			skip = 8
		case c >= 0xcc && c <= 0xcf:
			skip = 1 << (c - 0xcc)
		case c >= 0xd0 && c <= 0xd3:
			skip = 1 << (c - 0xd0)
		case c >= 0xd4 && c <= 0xd8:
			skip = 1 + 1<<(c-0xd4)
		case c == 0xdc:
			items, ok = uintN(2)
		case c == 0xdd:
			items, ok = uintN(4)
		case c == 0xde:
			items, ok = uintN(2)
			items *= 2
		case c == 0xdf:
			items, ok = uintN(4)
			items *= 2
		default: // 0xc1, never used
			return false
		}
		if !ok || !need(skip) {
			return false
		}
		i += skip
		pending += items
		if pending > len(data)-i {
			return false
		}
	}
	return true
}

func TestPlausibleMsgpack(t *testing.T) {
	t.Parallel()
	for _, c := range loadCases[reduceCase](t, "reduce-cases.json") {
		var v any
		if err := json.Unmarshal(c.Return, &v); err != nil {
			t.Fatal(err)
		}
		b, err := msgpack.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if !plausibleMsgpack(b) {
			t.Errorf("%s: real encoding judged implausible", c.Name)
		}
	}
	for _, b := range [][]byte{
		{0xdd, 0xff, 0xff, 0xff, 0xff},             // array32 of 4G elements
		{0xdf, 0x00, 0x10, 0x00, 0x00, 0xc0, 0xc0}, // map32 of 1M pairs
		{0x91, 0x91, 0x91},                         // truncated nesting
		{0xdb, 0x00, 0x00, 0x01, 0x00},             // str32 longer than the input
		{0xc1},                                     // never used
		{},
	} {
		if plausibleMsgpack(b) {
			t.Errorf("% x judged plausible", b)
		}
	}
}
