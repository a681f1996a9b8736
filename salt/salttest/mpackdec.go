package salttest

import (
	"encoding/binary"
	"math"
	"strconv"

	"github.com/cockroachdb/errors"
)

// errMsgpack reports a document the simulator cannot decode (truncated, reserved code, too deep).
var errMsgpack = errors.New("salttest: malformed msgpack")

// extValue is an ext-typed msgpack value (Salt uses 78 for datetimes and 79 for constants).
type extValue struct {
	Type int8
	Data []byte
}

// decoder reads one msgpack document into ordered, Python-like values: nil, bool, int64
// (uint64 above MaxInt64), float64, string (any str-family value, UTF-8 or not), []byte (bin),
// []any, *omap (maps, keys of any type), extValue. onCode, when set, sees every type byte.
type decoder struct {
	b      []byte
	pos    int
	depth  int
	onCode func(c byte)
}

// unpack decodes exactly one document; trailing bytes are an error.
func unpack(b []byte) (any, error) {
	d := &decoder{b: b}
	v, err := d.value()
	if err != nil {
		return nil, err
	}
	if d.pos != len(b) {
		return nil, errors.Wrap(errMsgpack, "trailing bytes")
	}
	return v, nil
}

func (d *decoder) need(n int) ([]byte, error) {
	if n < 0 || len(d.b)-d.pos < n {
		return nil, errors.Wrap(errMsgpack, "truncated")
	}
	p := d.b[d.pos : d.pos+n]
	d.pos += n
	return p, nil
}

func (d *decoder) uintN(n int) (uint64, error) {
	p, err := d.need(n)
	if err != nil {
		return 0, err
	}
	switch n {
	case 1:
		return uint64(p[0]), nil
	case 2:
		return uint64(binary.BigEndian.Uint16(p)), nil
	case 4:
		return uint64(binary.BigEndian.Uint32(p)), nil
	default:
		return binary.BigEndian.Uint64(p), nil
	}
}

func (d *decoder) length(n int) (int, error) {
	l, err := d.uintN(n)
	if err != nil {
		return 0, err
	}
	if l > uint64(len(d.b)) {
		return 0, errors.Wrap(errMsgpack, "length exceeds document")
	}
	return int(l), nil
}

func (d *decoder) value() (any, error) {
	d.depth++
	defer func() { d.depth-- }()
	if d.depth > maxDepth {
		return nil, errors.Wrap(errMsgpack, "nesting too deep")
	}
	p, err := d.need(1)
	if err != nil {
		return nil, err
	}
	c := p[0]
	if d.onCode != nil {
		d.onCode(c)
	}
	switch {
	case c <= 0x7f:
		return int64(c), nil
	case c >= 0xe0:
		return int64(int8(c)), nil
	case c&0xf0 == 0x80:
		return d.mapN(int(c & 0x0f))
	case c&0xf0 == 0x90:
		return d.arrayN(int(c & 0x0f))
	case c&0xe0 == 0xa0:
		return d.strN(int(c & 0x1f))
	}
	switch c {
	case 0xc0:
		return nil, nil
	case 0xc2:
		return false, nil
	case 0xc3:
		return true, nil
	case 0xc4, 0xc5, 0xc6:
		n, err := d.length(1 << (c - 0xc4))
		if err != nil {
			return nil, err
		}
		b, err := d.need(n)
		if err != nil {
			return nil, err
		}
		return append([]byte(nil), b...), nil
	case 0xc7, 0xc8, 0xc9:
		n, err := d.length(1 << (c - 0xc7))
		if err != nil {
			return nil, err
		}
		return d.ext(n)
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
		shift := uint(64 - 8*n)
		return int64(u<<shift) >> shift, nil
	case 0xd4, 0xd5, 0xd6, 0xd7, 0xd8:
		return d.ext(1 << (c - 0xd4))
	case 0xd9, 0xda, 0xdb:
		n, err := d.length(1 << (c - 0xd9))
		if err != nil {
			return nil, err
		}
		return d.strN(n)
	case 0xdc, 0xdd:
		n, err := d.length(2 << (c - 0xdc))
		if err != nil {
			return nil, err
		}
		return d.arrayN(n)
	case 0xde, 0xdf:
		n, err := d.length(2 << (c - 0xde))
		if err != nil {
			return nil, err
		}
		return d.mapN(n)
	}
	return nil, errors.Wrapf(errMsgpack, "reserved code 0x%x", errors.Safe(c))
}

func (d *decoder) ext(n int) (any, error) {
	t, err := d.need(1)
	if err != nil {
		return nil, err
	}
	b, err := d.need(n)
	if err != nil {
		return nil, err
	}
	return extValue{Type: int8(t[0]), Data: append([]byte(nil), b...)}, nil
}

func (d *decoder) strN(n int) (any, error) {
	b, err := d.need(n)
	if err != nil {
		return nil, err
	}
	return string(b), nil
}

func (d *decoder) arrayN(n int) (any, error) {
	if n > len(d.b)-d.pos {
		return nil, errors.Wrap(errMsgpack, "array longer than document")
	}
	out := make([]any, 0, n)
	for i := 0; i < n; i++ {
		v, err := d.value()
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

func (d *decoder) mapN(n int) (any, error) {
	if 2*n > len(d.b)-d.pos {
		return nil, errors.Wrap(errMsgpack, "map longer than document")
	}
	m := &omap{keys: make([]any, 0, n), vals: make([]any, 0, n)}
	for i := 0; i < n; i++ {
		k, err := d.value()
		if err != nil {
			return nil, err
		}
		v, err := d.value()
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
