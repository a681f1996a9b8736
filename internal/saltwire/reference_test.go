package saltwire

// The independent reference for this package's codec: the encoder and decoder the simulator
// used before the wire was written once, both over github.com/vmihailenco/msgpack/v5 (a
// library written by others, not sharing a line with Append or DecodeOrdered). The tests hold
// the two equal on every value and on fuzzed documents; the captured vectors of real Salt hold
// both to Salt.

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"maps"
	"math"
	"reflect"
	"slices"
	"sort"
	"time"
	"unicode/utf8"

	"github.com/cockroachdb/errors"
	"github.com/vmihailenco/msgpack/v5"
	"github.com/vmihailenco/msgpack/v5/msgpcode"
)

// packer walks the value (ordered maps, Python-like types) over a msgpack/v5 Encoder.
type packer struct {
	e      *msgpack.Encoder
	w      io.Writer // the encoder's own writer: raw old-spec strings go there, in order
	oldStr bool
	depth  int
}

// refPack is the reference encoding of v in dialect d.
func refPack(v any, d Dialect) ([]byte, error) {
	var buf bytes.Buffer
	enc := msgpack.NewEncoder(&buf)
	p := &packer{e: enc, w: enc.Writer(), oldStr: d == Request}
	err := p.encode(v)
	return buf.Bytes(), err
}

// writeOldStr is the old-spec string writer: fixstr, str16 or str32, never str8.
func writeOldStr(w io.Writer, s string) error {
	var hdr []byte
	switch n := len(s); {
	case n < 32:
		hdr = []byte{0xa0 | byte(n)}
	case n < 1<<16:
		hdr = binary.BigEndian.AppendUint16([]byte{0xda}, uint16(n))
	default:
		hdr = binary.BigEndian.AppendUint32([]byte{0xdb}, uint32(n))
	}
	if _, err := w.Write(hdr); err != nil {
		return err
	}
	_, err := io.WriteString(w, s)
	return err
}

func (p *packer) str(s string) error {
	switch {
	case p.oldStr:
		return writeOldStr(p.w, s)
	case !utf8.ValidString(s):
		return p.bin([]byte(s)) // a Python bytes value: not text
	}
	return p.e.EncodeString(s)
}

func (p *packer) bin(b []byte) error {
	if p.oldStr {
		return writeOldStr(p.w, string(b))
	}
	if err := p.e.EncodeBytesLen(len(b)); err != nil { // EncodeBytes would turn nil into nil
		return err
	}
	_, err := p.w.Write(b)
	return err
}

func (p *packer) ext(typ int8, data []byte) error {
	if err := p.e.EncodeExtHeader(typ, len(data)); err != nil {
		return err
	}
	_, err := p.w.Write(data)
	return err
}

func (p *packer) encode(v any) error {
	p.depth++
	defer func() { p.depth-- }()
	if p.depth > maxEncodeDepth+1 {
		return errors.Wrap(ErrUnsupportedType, "nesting too deep")
	}
	e := p.e
	switch x := v.(type) {
	case nil:
		return e.EncodeNil()
	case bool:
		return e.EncodeBool(x)
	case string:
		return p.str(x)
	case []byte:
		return p.bin(x)
	case int:
		return e.EncodeInt(int64(x)) // smallest form, as msgpack-python packs ints
	case int8:
		return e.EncodeInt(int64(x))
	case int16:
		return e.EncodeInt(int64(x))
	case int32:
		return e.EncodeInt(int64(x))
	case int64:
		return e.EncodeInt(x)
	case uint:
		return e.EncodeUint(uint64(x))
	case uint8:
		return e.EncodeUint(uint64(x))
	case uint16:
		return e.EncodeUint(uint64(x))
	case uint32:
		return e.EncodeUint(uint64(x))
	case uint64:
		return e.EncodeUint(x)
	case float64:
		return e.EncodeFloat64(x)
	case float32:
		return e.EncodeFloat64(float64(x)) // a Python float is a double
	case time.Time:
		// Salt packs datetimes as ext 78 with an ASCII payload (msgpack/v5 would use ext -1).
		return p.ext(78, []byte(x.Format("20060102T15:04:05.000000")))
	case Ext:
		return p.ext(x.Type, x.Data)
	case *OrderedMap:
		if x == nil {
			return e.EncodeNil() // ours: a nil map pointer is nil, not {}
		}
		if err := e.EncodeMapLen(x.Len()); err != nil {
			return err
		}
		for i := range x.Keys {
			if err := p.encode(x.Keys[i]); err != nil {
				return err
			}
			if err := p.encode(x.Vals[i]); err != nil {
				return err
			}
		}
		return nil
	case []any:
		if err := e.EncodeArrayLen(len(x)); err != nil {
			return err
		}
		for _, el := range x {
			if err := p.encode(el); err != nil {
				return err
			}
		}
		return nil
	case []string:
		if err := e.EncodeArrayLen(len(x)); err != nil {
			return err
		}
		for _, el := range x {
			if err := p.str(el); err != nil {
				return err
			}
		}
		return nil
	case map[string]any:
		if err := e.EncodeMapLen(len(x)); err != nil {
			return err
		}
		for _, k := range slices.Sorted(maps.Keys(x)) {
			if err := p.str(k); err != nil {
				return err
			}
			if err := p.encode(x[k]); err != nil {
				return err
			}
		}
		return nil
	}
	return p.encodeReflect(v)
}

// encodeReflect handles the remaining slices and maps (for example []map[string]any or
// map[string]string) that handlers may return.
func (p *packer) encodeReflect(v any) error {
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Slice, reflect.Array:
		if err := p.e.EncodeArrayLen(rv.Len()); err != nil {
			return err
		}
		for i := 0; i < rv.Len(); i++ {
			if err := p.encode(rv.Index(i).Interface()); err != nil {
				return err
			}
		}
		return nil
	case reflect.Map:
		keys := rv.MapKeys()
		sort.Slice(keys, func(i, j int) bool {
			return fmt.Sprint(keys[i].Interface()) < fmt.Sprint(keys[j].Interface())
		})
		if err := p.e.EncodeMapLen(len(keys)); err != nil {
			return err
		}
		for _, k := range keys {
			if err := p.encode(k.Interface()); err != nil {
				return err
			}
			if err := p.encode(rv.MapIndex(k).Interface()); err != nil {
				return err
			}
		}
		return nil
	case reflect.Pointer:
		if rv.IsNil() {
			return p.e.EncodeNil()
		}
		return p.encode(rv.Elem().Interface())
	case reflect.String:
		return p.str(rv.String())
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return p.e.EncodeInt(rv.Int())
	case reflect.Bool:
		return p.e.EncodeBool(rv.Bool())
	}
	return errors.Wrapf(ErrUnsupportedType, "type %s", errors.Safe(rv.Type().String()))
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
	src      *bytes.Reader // remaining input: bounds lengths before anything is allocated
	d        *msgpack.Decoder
	depth    int
	maxDepth int
	onCode   func(c byte)
}

func newReader(b []byte, maxDepth int) *reader {
	src := bytes.NewReader(b)
	return &reader{src: src, d: msgpack.NewDecoder(src), maxDepth: maxDepth}
}

// refUnpackPrefix is the reference decoding of the document at the start of b (nesting up to
// maxDepth levels) and the bytes it used.
func refUnpackPrefix(b []byte, maxDepth int) (any, int, error) {
	r := newReader(b, maxDepth)
	v, err := r.value()
	if err != nil {
		return nil, 0, err
	}
	return v, len(b) - r.src.Len(), nil
}

// fits rejects a declared element count or byte length larger than what is left of the input.
func (r *reader) fits(n int) error {
	if n < 0 || n > r.src.Len() {
		return errors.Wrap(ErrMsgpack, "length exceeds document")
	}
	return nil
}

func (r *reader) value() (any, error) {
	r.depth++
	defer func() { r.depth-- }()
	if r.depth > r.maxDepth {
		return nil, errors.Wrap(ErrMsgpack, "nesting too deep")
	}
	c, err := r.d.PeekCode()
	if err != nil {
		return nil, errors.Wrap(ErrMsgpack, "truncated")
	}
	if r.onCode != nil {
		r.onCode(c)
	}
	v, err := r.scalarOrContainer(c)
	if err != nil && !errors.Is(err, ErrMsgpack) {
		return nil, errors.CombineErrors(errors.Wrap(ErrMsgpack, "decode"), err)
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
	m := NewOrderedMap(n)
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
			m.Set(ks, v)
			continue
		}
		m.Keys = append(m.Keys, k)
		m.Vals = append(m.Vals, v)
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
	return Ext{Type: id, Data: data}, nil
}
