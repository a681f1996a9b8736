package saltwire

import (
	"encoding/binary"
	"math"
	"strconv"
	"time"

	"github.com/cockroachdb/errors"
)

// Constant is Salt's ext type 79: a salt.defaults._Constant such as NOT_SET, carried as msgpack
// [name, value].
type Constant struct {
	Name  string
	Value any
}

// Ext is an extension value the decoder has no meaning for (or, decoding in order, any ext
// value). It is kept, not rejected, so that one odd value does not make a whole return
// unreadable; the encoder writes it back as it came.
type Ext struct {
	Type int8
	Data []byte
}

// DatetimeLayout is Salt's ext 78 payload, Python's %Y%m%dT%H:%M:%S.%f.
const DatetimeLayout = "20060102T15:04:05.999999"

// Decode decodes one msgpack document tolerantly, the way Salt's receivers do (raw=False,
// strict_map_key=False):
//
//   - str and bin values become Go strings, whether or not they are UTF-8;
//   - maps become map[string]any; non-string keys are stringified the way Python's str() would
//     print them (1 -> "1", True -> "True", None -> "None");
//   - integers become int64 (uint64 only above math.MaxInt64), floats float64;
//   - ext 78 becomes a time.Time (UTC, naive in Salt), ext 79 a Constant, the msgpack timestamp
//     (ext -1) a time.Time, any other ext an Ext;
//   - nil stays nil.
//
// The whole input must be exactly one document. Every length is checked against the input
// before anything is allocated, and a document that would exceed lim fails with ErrBudget before
// the excess is allocated. It also returns the estimated bytes the decoded value holds.
func Decode(data []byte, lim Limits) (any, int64, error) {
	if !lim.Valid() {
		return nil, 0, errors.Wrap(ErrBudget, "invalid decode limits")
	}
	bud := NewBudget(lim)
	d := &tolerantDecoder{b: data, bud: bud}
	v, err := d.top()
	if err != nil {
		return nil, 0, err
	}
	if bud.Exceeded {
		// an ext 79 payload over the budget falls back to Ext: still a refusal
		return nil, 0, budgetError("decoded document too large")
	}
	if d.off != len(d.b) {
		return nil, 0, errors.Wrapf(ErrMsgpack, "%d trailing bytes", errors.Safe(len(d.b)-d.off))
	}
	return v, bud.Spent(lim), nil
}

// DecodeOrdered decodes the document at the start of b without losing anything Salt's packer
// wrote, for a peer that must reproduce or inspect the exact document (the simulator): maps
// become *OrderedMap in wire order with their keys as decoded (any type), bin stays []byte and
// str string, every ext value stays an Ext, integers and floats are as in Decode. It returns how
// many bytes the document used; onCode, when set, sees every value's type byte. lim bounds it
// as in Decode.
func DecodeOrdered(b []byte, lim Limits, onCode func(c byte)) (any, int, error) {
	if !lim.Valid() {
		return nil, 0, errors.Wrap(ErrBudget, "invalid decode limits")
	}
	d := &tolerantDecoder{b: b, bud: NewBudget(lim), ordered: true, onCode: onCode}
	v, err := d.top()
	if err != nil {
		return nil, 0, err
	}
	return v, d.off, nil
}

// tolerantDecoder is Decode's and DecodeOrdered's walk over one document.
type tolerantDecoder struct {
	b       []byte
	off     int
	bud     *Budget
	ordered bool         // DecodeOrdered: keep wire order, key types, bin and ext as they are
	onCode  func(c byte) // DecodeOrdered's observer of type bytes
}

// charge spends budget or fails with errDecodeBudget.
func (d *tolerantDecoder) charge(elems, bytes int64) error {
	if !d.bud.Charge(elems, bytes) {
		return budgetError("decoded document too large")
	}
	return nil
}

// top decodes one document: its slot counts as one element.
func (d *tolerantDecoder) top() (any, error) {
	if err := d.charge(1, CostSlot); err != nil {
		return nil, err
	}
	return d.value(0)
}

func (d *tolerantDecoder) need(n int) ([]byte, error) {
	if n < 0 || n > len(d.b)-d.off {
		return nil, errors.Wrap(ErrMsgpack, "truncated")
	}
	s := d.b[d.off : d.off+n]
	d.off += n
	return s, nil
}

func (d *tolerantDecoder) uintN(n int) (uint64, error) {
	s, err := d.need(n)
	if err != nil {
		return 0, err
	}
	switch n {
	case 1:
		return uint64(s[0]), nil
	case 2:
		return uint64(binary.BigEndian.Uint16(s)), nil
	case 4:
		return uint64(binary.BigEndian.Uint32(s)), nil
	default:
		return binary.BigEndian.Uint64(s), nil
	}
}

func (d *tolerantDecoder) length(n int) (int, error) {
	u, err := d.uintN(n)
	if err != nil {
		return 0, err
	}
	if u > uint64(len(d.b)-d.off) {
		return 0, errors.Wrap(ErrMsgpack, "length exceeds input")
	}
	return int(u), nil
}

func (d *tolerantDecoder) value(depth int) (any, error) {
	if !d.bud.depthOK(depth) {
		return nil, budgetError("nesting too deep")
	}
	hdr, err := d.need(1)
	if err != nil {
		return nil, err
	}
	c := hdr[0]
	if d.onCode != nil {
		d.onCode(c)
	}
	if isNumberByte(c) {
		if err := d.charge(0, costNumber); err != nil {
			return nil, err
		}
	}
	switch {
	case c <= 0x7f:
		return int64(c), nil
	case c >= 0xe0:
		return int64(int8(c)), nil
	case c >= 0xa0 && c <= 0xbf:
		return d.str(int(c & 0x1f))
	case c >= 0x90 && c <= 0x9f:
		return d.array(int(c&0x0f), depth)
	case c >= 0x80 && c <= 0x8f:
		return d.mapN(int(c&0x0f), depth)
	}
	switch c {
	case 0xc0:
		return nil, nil
	case 0xc2:
		return false, nil
	case 0xc3:
		return true, nil
	case 0xd9:
		return d.strLen(1)
	case 0xda:
		return d.strLen(2)
	case 0xdb:
		return d.strLen(4)
	case 0xc4, 0xc5, 0xc6:
		if !d.ordered {
			return d.strLen(1 << (c - 0xc4))
		}
		n, err := d.length(1 << (c - 0xc4))
		if err != nil {
			return nil, err
		}
		if err := d.charge(0, costString+int64(n)); err != nil {
			return nil, err
		}
		b, err := d.need(n)
		return append([]byte{}, b...), err
	case 0xca:
		u, err := d.uintN(4)
		return float64(math.Float32frombits(uint32(u))), err
	case 0xcb:
		u, err := d.uintN(8)
		return math.Float64frombits(u), err
	case 0xcc, 0xcd, 0xce, 0xcf:
		u, err := d.uintN(1 << (c - 0xcc))
		if err != nil {
			return nil, err
		}
		if u > math.MaxInt64 {
			return u, nil
		}
		return int64(u), nil
	case 0xd0, 0xd1, 0xd2, 0xd3:
		n := 1 << (c - 0xd0)
		u, err := d.uintN(n)
		if err != nil {
			return nil, err
		}
		switch n {
		case 1:
			return int64(int8(u)), nil
		case 2:
			return int64(int16(u)), nil
		case 4:
			return int64(int32(u)), nil
		}
		return int64(u), nil
	case 0xdc:
		n, err := d.length(2)
		if err != nil {
			return nil, err
		}
		return d.array(n, depth)
	case 0xdd:
		n, err := d.length(4)
		if err != nil {
			return nil, err
		}
		return d.array(n, depth)
	case 0xde:
		n, err := d.length(2)
		if err != nil {
			return nil, err
		}
		return d.mapN(n, depth)
	case 0xdf:
		n, err := d.length(4)
		if err != nil {
			return nil, err
		}
		return d.mapN(n, depth)
	case 0xd4, 0xd5, 0xd6, 0xd7, 0xd8:
		return d.ext(1<<(c-0xd4), depth)
	case 0xc7:
		n, err := d.length(1)
		if err != nil {
			return nil, err
		}
		return d.ext(n, depth)
	case 0xc8:
		n, err := d.length(2)
		if err != nil {
			return nil, err
		}
		return d.ext(n, depth)
	case 0xc9:
		n, err := d.length(4)
		if err != nil {
			return nil, err
		}
		return d.ext(n, depth)
	}
	return nil, errors.Wrapf(ErrMsgpack, "reserved type byte 0x%02x", errors.Safe(c))
}

func (d *tolerantDecoder) strLen(n int) (any, error) {
	l, err := d.length(n)
	if err != nil {
		return nil, err
	}
	return d.str(l)
}

func (d *tolerantDecoder) str(n int) (any, error) {
	if err := d.charge(0, costString+int64(n)); err != nil {
		return nil, err
	}
	s, err := d.need(n)
	if err != nil {
		return nil, err
	}
	return string(s), nil
}

// rawString returns a str or bin value as a slice of the input (no copy).
func (d *tolerantDecoder) rawString() ([]byte, error) {
	h, err := d.need(1)
	if err != nil {
		return nil, err
	}
	var n int
	switch c := h[0]; {
	case c >= 0xa0 && c <= 0xbf:
		n = int(c & 0x1f)
	case c == 0xc4 || c == 0xd9:
		n, err = d.length(1)
	case c == 0xc5 || c == 0xda:
		n, err = d.length(2)
	case c == 0xc6 || c == 0xdb:
		n, err = d.length(4)
	default:
		return nil, errors.Wrap(ErrMsgpack, "expected str or bin")
	}
	if err != nil {
		return nil, err
	}
	return d.need(n)
}

func (d *tolerantDecoder) array(n, depth int) (any, error) {
	if n > len(d.b)-d.off {
		return nil, errors.Wrap(ErrMsgpack, "array length exceeds input")
	}
	if err := d.charge(int64(n), costArray+CostSlot*int64(n)); err != nil {
		return nil, err
	}
	out := make([]any, n)
	for i := range out {
		v, err := d.value(depth + 1)
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}

func (d *tolerantDecoder) mapN(n, depth int) (any, error) {
	if n > (len(d.b)-d.off)/2 {
		return nil, errors.Wrap(ErrMsgpack, "map length exceeds input")
	}
	if d.ordered {
		return d.orderedMap(n, depth)
	}
	// n is bounded by the input, not by the number of distinct keys: a
	// document of n duplicate keys must not preallocate n entries (40 bytes
	// of map per 2 input bytes). The map grows as keys actually arrive, and
	// is charged per distinct key.
	if err := d.charge(2*int64(n), mapCharge(n)); err != nil {
		return nil, err
	}
	out := make(map[string]any, min(n, maxMapHint))
	for i := 0; i < n; i++ {
		k, err := d.value(depth + 1)
		if err != nil {
			return nil, err
		}
		ks, err := MapKeyString(k)
		if err != nil {
			return nil, err
		}
		if _, isStr := k.(string); !isStr {
			if err := d.charge(0, costString); err != nil {
				return nil, err
			}
		}
		v, err := d.value(depth + 1)
		if err != nil {
			return nil, err
		}
		if _, dup := out[ks]; !dup && len(out) >= min(n, maxMapHint) {
			if err := d.charge(0, costEntry); err != nil {
				return nil, err
			}
		}
		out[ks] = v
	}
	return out, nil
}

// orderedMap is mapN for DecodeOrdered: wire order, keys as decoded; a repeated string key
// keeps its first position and its last value, like a Python dict.
func (d *tolerantDecoder) orderedMap(n, depth int) (any, error) {
	if err := d.charge(2*int64(n), costMap+2*CostSlot*int64(n)); err != nil {
		return nil, err
	}
	m := NewOrderedMap(n)
	for i := 0; i < n; i++ {
		k, err := d.value(depth + 1)
		if err != nil {
			return nil, err
		}
		v, err := d.value(depth + 1)
		if err != nil {
			return nil, err
		}
		if ks, ok := k.(string); ok {
			m.Set(ks, v)
			continue
		}
		m.Keys = append(m.Keys, k)
		m.Vals = append(m.Vals, v)
	}
	return m, nil
}

// isNumberByte reports the type bytes of integers and floats (boxed into 8 bytes).
func isNumberByte(c byte) bool {
	return c <= 0x7f || c >= 0xe0 || (c >= 0xca && c <= 0xd3)
}

// MapKeyString renders a decoded map key as Python's str() would.
func MapKeyString(k any) (string, error) {
	switch x := k.(type) {
	case string:
		return x, nil
	case int64:
		return strconv.FormatInt(x, 10), nil
	case uint64:
		return strconv.FormatUint(x, 10), nil
	case bool:
		if x {
			return "True", nil
		}
		return "False", nil
	case nil:
		return "None", nil
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64), nil
	case time.Time:
		return x.Format("2006-01-02 15:04:05.999999"), nil
	}
	return "", errors.Wrap(ErrMsgpack, "unhashable map key")
}

func (d *tolerantDecoder) ext(n, depth int) (any, error) {
	th, err := d.need(1)
	if err != nil {
		return nil, err
	}
	typ := int8(th[0])
	if err := d.charge(0, costExt+int64(n)); err != nil {
		return nil, err
	}
	payload, err := d.need(n)
	if err != nil {
		return nil, err
	}
	if d.ordered {
		return Ext{Type: typ, Data: append([]byte{}, payload...)}, nil
	}
	switch typ {
	case 78:
		if t, err := time.Parse(DatetimeLayout, string(payload)); err == nil {
			return t, nil
		}
	case 79:
		inner := &tolerantDecoder{b: payload, bud: d.bud}
		if err := inner.charge(1, 0); err != nil {
			return nil, err
		}
		v, err := inner.value(depth + 1)
		if err == nil && inner.off == len(payload) {
			if arr, ok := v.([]any); ok && len(arr) == 2 {
				if name, ok := arr[0].(string); ok {
					return Constant{Name: name, Value: arr[1]}, nil
				}
			}
		}
	case -1:
		if t, ok := decodeTimestamp(payload); ok {
			return t, nil
		}
	}
	return Ext{Type: typ, Data: append([]byte(nil), payload...)}, nil
}

func decodeTimestamp(p []byte) (time.Time, bool) {
	switch len(p) {
	case 4:
		return time.Unix(int64(binary.BigEndian.Uint32(p)), 0).UTC(), true
	case 8:
		v := binary.BigEndian.Uint64(p)
		return time.Unix(int64(v&0x3ffffffff), int64(v>>34)).UTC(), true
	case 12:
		ns := binary.BigEndian.Uint32(p[:4])
		s := int64(binary.BigEndian.Uint64(p[4:]))
		return time.Unix(s, int64(ns)).UTC(), true
	}
	return time.Time{}, false
}
