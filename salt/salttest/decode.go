package salttest

import (
	"bytes"
	"math"
	"strconv"

	"github.com/cockroachdb/errors"
	"github.com/vmihailenco/msgpack/v5"
	"github.com/vmihailenco/msgpack/v5/msgpcode"
)

// errMsgpack reports a document the simulator cannot decode (truncated, reserved code, too deep).
var errMsgpack = errors.New("salttest: malformed msgpack")

// extValue is an ext-typed msgpack value (Salt uses 78 for datetimes and 79 for constants).
type extValue struct {
	Type int8
	Data []byte
}

// reader decodes msgpack with github.com/vmihailenco/msgpack/v5 (a decoder written
// independently of package salt's) into ordered, Python-like values: nil, bool, int64 (uint64
// above MaxInt64), float64, string (any str-family value, UTF-8 or not), []byte (bin), []any,
// *omap (maps, keys of any type, in wire order), extValue.
//
// The walk is ours, the reading is msgpack/v5's: its generic interface decoding would turn
// maps into unordered Go maps, bin into string (DecodeInterfaceLoose) and unknown ext types
// into errors, and changing that needs its process-wide RegisterExt. Dispatching on PeekCode
// keeps Salt's quirks per decoder with no global state. onCode, when set, sees every value's
// type byte (the golden tests count format families with it).
type reader struct {
	src    *bytes.Reader // remaining input: bounds lengths before anything is allocated
	d      *msgpack.Decoder
	depth  int
	onCode func(c byte)
}

const maxDepth = 100

func newReader(b []byte) *reader {
	src := bytes.NewReader(b)
	return &reader{src: src, d: msgpack.NewDecoder(src)}
}

// unpack decodes exactly one document; trailing bytes are an error.
func unpack(b []byte) (any, error) {
	v, n, err := unpackPrefix(b)
	if err != nil {
		return nil, err
	}
	if n != len(b) {
		return nil, errors.Wrap(errMsgpack, "trailing bytes")
	}
	return v, nil
}

// unpackPrefix decodes the document at the start of b and reports how many bytes it used.
func unpackPrefix(b []byte) (any, int, error) {
	r := newReader(b)
	v, err := r.value()
	if err != nil {
		return nil, 0, err
	}
	return v, len(b) - r.src.Len(), nil
}

// fits rejects a declared element count or byte length larger than what is left of the input.
func (r *reader) fits(n int) error {
	if n < 0 || n > r.src.Len() {
		return errors.Wrap(errMsgpack, "length exceeds document")
	}
	return nil
}

func (r *reader) value() (any, error) {
	r.depth++
	defer func() { r.depth-- }()
	if r.depth > maxDepth {
		return nil, errors.Wrap(errMsgpack, "nesting too deep")
	}
	c, err := r.d.PeekCode()
	if err != nil {
		return nil, errors.Wrap(errMsgpack, "truncated")
	}
	if r.onCode != nil {
		r.onCode(c)
	}
	v, err := r.scalarOrContainer(c)
	if err != nil && !errors.Is(err, errMsgpack) {
		return nil, errors.CombineErrors(errors.Wrap(errMsgpack, "decode"), err)
	}
	return v, err
}

func (r *reader) scalarOrContainer(c byte) (any, error) {
	switch {
	case msgpcode.IsFixedNum(c), c >= msgpcode.Int8 && c <= msgpcode.Int64:
		return r.d.DecodeInt64()
	case c >= msgpcode.Uint8 && c <= msgpcode.Uint64:
		u, err := r.d.DecodeUint64()
		if err == nil && u <= math.MaxInt64 {
			return int64(u), nil
		}
		return u, err
	case msgpcode.IsString(c):
		b, err := r.raw()
		return string(b), err // no UTF-8 check: Salt's old str family carries raw bytes
	case msgpcode.IsBin(c):
		return r.raw()
	case c == msgpcode.Float || c == msgpcode.Double:
		return r.d.DecodeFloat64()
	case c == msgpcode.Nil:
		return nil, r.d.DecodeNil()
	case c == msgpcode.False || c == msgpcode.True:
		return r.d.DecodeBool()
	case msgpcode.IsFixedMap(c), c == msgpcode.Map16, c == msgpcode.Map32:
		return r.mapValue()
	case msgpcode.IsFixedArray(c), c == msgpcode.Array16, c == msgpcode.Array32:
		return r.arrayValue()
	case msgpcode.IsExt(c):
		return r.extValue()
	}
	return nil, errors.Newf("reserved code 0x%x", errors.Safe(c))
}

// raw reads a str or bin payload. msgpack/v5's DecodeString and DecodeBytes allocate the
// declared length before reading (a 9-byte input declaring 2.8 GB of bin allocates it), so the
// length is read with DecodeBytesLen and checked against the input first.
func (r *reader) raw() ([]byte, error) {
	n, err := r.d.DecodeBytesLen()
	if err != nil {
		return nil, err
	}
	if err := r.fits(n); err != nil {
		return nil, err
	}
	b := make([]byte, n)
	return b, r.d.ReadFull(b)
}

func (r *reader) arrayValue() (any, error) {
	n, err := r.d.DecodeArrayLen()
	if err != nil {
		return nil, err
	}
	if err := r.fits(n); err != nil { // every element takes at least one byte
		return nil, err
	}
	out := make([]any, 0, n)
	for i := 0; i < n; i++ {
		v, err := r.value()
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

// mapValue keeps the wire order and non-string keys (Salt's returns have int keys); a repeated
// string key keeps its first position and its last value, like a Python dict.
func (r *reader) mapValue() (any, error) {
	n, err := r.d.DecodeMapLen()
	if err != nil {
		return nil, err
	}
	if err := r.fits(2 * n); err != nil {
		return nil, err
	}
	m := &omap{keys: make([]any, 0, n), vals: make([]any, 0, n)}
	for i := 0; i < n; i++ {
		k, err := r.value()
		if err != nil {
			return nil, err
		}
		v, err := r.value()
		if err != nil {
			return nil, err
		}
		if ks, ok := k.(string); ok {
			m.set(ks, v)
			continue
		}
		m.keys = append(m.keys, k)
		m.vals = append(m.vals, v)
	}
	return m, nil
}

// extValue reads Salt's ext 78 (datetime) and 79 (constants), and any other ext type, as raw
// data: no process-wide RegisterExt is needed.
func (r *reader) extValue() (any, error) {
	id, n, err := r.d.DecodeExtHeader()
	if err != nil {
		return nil, err
	}
	if err := r.fits(n); err != nil {
		return nil, err
	}
	data := make([]byte, n)
	if err := r.d.ReadFull(data); err != nil {
		return nil, err
	}
	return extValue{Type: id, Data: data}, nil
}

// plain converts decoded values into ordinary Go values for handlers: maps become
// map[string]any (non-string keys formatted), arrays []any, ext values their raw bytes.
func plain(v any) any {
	switch x := v.(type) {
	case *omap:
		out := make(map[string]any, x.len())
		for i, k := range x.keys {
			out[keyString(k)] = plain(x.vals[i])
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, el := range x {
			out[i] = plain(el)
		}
		return out
	case extValue:
		return x.Data
	}
	return v
}

func keyString(k any) string {
	switch x := k.(type) {
	case string:
		return x
	case int64:
		return strconv.FormatInt(x, 10)
	case uint64:
		return strconv.FormatUint(x, 10)
	case bool:
		return strconv.FormatBool(x)
	case nil:
		return "None"
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	}
	return "?"
}
