package salttest

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"reflect"
	"sort"
	"time"
	"unicode/utf8"

	"github.com/cockroachdb/errors"
	"github.com/vmihailenco/msgpack/v5"
)

// Salt packs with msgpack-python in two dialects, and the simulator reproduces both byte for
// byte (the captured vectors are the oracle):
//
//   - event bus (use_bin_type=True): the current spec, which github.com/vmihailenco/msgpack/v5
//     writes as Salt does (str8 for 32-255-byte strings, bin for bytes);
//   - request-channel replies (use_bin_type=False): the old spec, where every string and every
//     byte slice is in the str family without str8 (fixstr, str16, str32). msgpack/v5 always
//     writes str8, so oldStr writes those headers; everything else goes through msgpack/v5.
//
// packer walks the value (ordered maps, Python-like types) over a msgpack/v5 Encoder.
type packer struct {
	e      *msgpack.Encoder
	w      io.Writer // the encoder's own writer: raw old-spec strings go there, in order
	oldStr bool
	depth  int
}

var errUnsupportedType = errors.New("salttest: value cannot be encoded as msgpack")

// packSalt encodes a request-channel reply (old str family only).
func packSalt(v any) ([]byte, error) { return pack(v, true) }

// packEvent encodes an event-bus frame or event data (current spec): appendEvent's fast path,
// packer for what it does not cover.
func packEvent(v any) ([]byte, error) {
	if b, ok := appendEvent(nil, v); ok {
		return b, nil
	}
	return pack(v, false)
}

func pack(v any, oldStr bool) ([]byte, error) {
	var buf bytes.Buffer
	e := msgpack.NewEncoder(&buf)
	p := &packer{e: e, w: e.Writer(), oldStr: oldStr}
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
	if p.depth > maxDepth {
		return errors.Wrap(errUnsupportedType, "nesting too deep")
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
	case extValue:
		return p.ext(x.Type, x.Data)
	case *omap:
		if err := e.EncodeMapLen(x.len()); err != nil || x == nil {
			return err
		}
		for i := range x.keys {
			if err := p.encode(x.keys[i]); err != nil {
				return err
			}
			if err := p.encode(x.vals[i]); err != nil {
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
		for _, k := range sortedKeys(x) {
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
	return errors.Wrapf(errUnsupportedType, "type %s", errors.Safe(rv.Type().String()))
}
