package receipt

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"math"
	"reflect"
	"slices"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/cockroachdb/errors"

	"github.com/oduflow/oduflow-go/internal/errmark"
)

// maxDepth bounds the nesting of arrays and objects that CanonicalJSON accepts
// (a guard against cyclic Go values and stack exhaustion).
const maxDepth = 512

// maxSafeInteger is 2^53, the largest magnitude at which every integer is an
// exact IEEE double. Integers of Go integer kinds (and integer json.Number
// literals) outside ±maxSafeInteger have no canonical form.
const maxSafeInteger = 1 << 53

// CanonicalJSON returns the RFC 8785 (JCS) serialization of a JSON-like Go
// value: object members sorted by the UTF-16 code units of their names, no
// insignificant whitespace, numbers in ECMAScript Number.prototype.toString
// form, strings escaped minimally (\" \\ \b \f \n \r \t and \u00xx for other
// control characters; everything else literal UTF-8).
//
// Accepted: nil, bool, string, every int/uint/float kind, json.Number,
// map[string]any, map[any]any with string keys, []any, and by reflection any
// slice, array or string-keyed map of those (named types included). Refused
// with errNotCanonical: NaN and infinities, integers beyond ±2^53, invalid
// UTF-8, non-string keys, []byte, other types, nesting beyond maxDepth (512).
func CanonicalJSON(v any) (_ []byte, err error) {
	defer errmark.Boundary(&err)
	e := encoder{buf: make([]byte, 0, 256)}
	if err := e.value(v, 0); err != nil {
		return nil, err
	}
	return e.buf, nil
}

// Digest returns the lowercase hex SHA-256 of CanonicalJSON(v).
func digestOf(v any) (string, error) {
	c, err := CanonicalJSON(v)
	if err != nil {
		return "", err
	}
	return Digest(c), nil
}

// Digest returns the lowercase hex SHA-256 of canonical JSON bytes (CanonicalJSON): the
// state_digest that binds a custom payload.
func Digest(canonical []byte) string {
	sum := sha256.Sum256(canonical)
	return hex.EncodeToString(sum[:])
}

func notCanonical(why string) error {
	return errors.Wrap(errNotCanonical, why)
}

type encoder struct{ buf []byte }

func (e *encoder) value(v any, depth int) error {
	if depth > maxDepth {
		return notCanonical("nesting too deep")
	}
	switch x := v.(type) {
	case nil:
		e.buf = append(e.buf, "null"...)
	case bool:
		e.buf = strconv.AppendBool(e.buf, x)
	case string:
		return e.str(x)
	case json.Number:
		return e.jsonNumber(string(x))
	case float64:
		return e.float(x)
	case float32:
		return e.float(float64(x))
	case int:
		return e.int(int64(x))
	case int8:
		return e.int(int64(x))
	case int16:
		return e.int(int64(x))
	case int32:
		return e.int(int64(x))
	case int64:
		return e.int(x)
	case uint:
		return e.uint(uint64(x))
	case uint8:
		return e.uint(uint64(x))
	case uint16:
		return e.uint(uint64(x))
	case uint32:
		return e.uint(uint64(x))
	case uint64:
		return e.uint(x)
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		return e.object(keys, func(k string) any { return x[k] }, depth)
	case map[any]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			ks, ok := k.(string)
			if !ok {
				return notCanonical("non-string object key")
			}
			keys = append(keys, ks)
		}
		return e.object(keys, func(k string) any { return x[k] }, depth)
	case []any:
		e.buf = append(e.buf, '[')
		for i, el := range x {
			if i > 0 {
				e.buf = append(e.buf, ',')
			}
			if err := e.value(el, depth+1); err != nil {
				return err
			}
		}
		e.buf = append(e.buf, ']')
	case []byte:
		return notCanonical("byte slice")
	default:
		return e.reflectValue(reflect.ValueOf(v), depth)
	}
	return nil
}

// reflectValue handles named types and typed containers.
func (e *encoder) reflectValue(rv reflect.Value, depth int) error {
	switch rv.Kind() {
	case reflect.Bool:
		e.buf = strconv.AppendBool(e.buf, rv.Bool())
		return nil
	case reflect.String:
		return e.str(rv.String())
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return e.int(rv.Int())
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return e.uint(rv.Uint())
	case reflect.Float32, reflect.Float64:
		return e.float(rv.Float())
	case reflect.Pointer, reflect.Interface:
		if rv.IsNil() {
			e.buf = append(e.buf, "null"...)
			return nil
		}
		return e.value(rv.Elem().Interface(), depth+1)
	case reflect.Slice, reflect.Array:
		if rv.Type().Elem().Kind() == reflect.Uint8 {
			return notCanonical("byte slice")
		}
		if rv.Kind() == reflect.Slice && rv.IsNil() {
			e.buf = append(e.buf, "null"...)
			return nil
		}
		e.buf = append(e.buf, '[')
		for i := 0; i < rv.Len(); i++ {
			if i > 0 {
				e.buf = append(e.buf, ',')
			}
			if err := e.value(rv.Index(i).Interface(), depth+1); err != nil {
				return err
			}
		}
		e.buf = append(e.buf, ']')
		return nil
	case reflect.Map:
		if rv.Type().Key().Kind() != reflect.String {
			return notCanonical("non-string object key")
		}
		if rv.IsNil() {
			e.buf = append(e.buf, "null"...)
			return nil
		}
		vals := make(map[string]any, rv.Len())
		keys := make([]string, 0, rv.Len())
		it := rv.MapRange()
		for it.Next() {
			k := it.Key().String()
			keys = append(keys, k)
			vals[k] = it.Value().Interface()
		}
		return e.object(keys, func(k string) any { return vals[k] }, depth)
	}
	return notCanonical("unsupported type " + rv.Type().String())
}

func (e *encoder) object(keys []string, get func(string) any, depth int) error {
	type key struct {
		s string
		u []uint16
	}
	ks := make([]key, len(keys))
	for i, k := range keys {
		if !utf8.ValidString(k) {
			return notCanonical("invalid UTF-8 in object key")
		}
		ks[i] = key{s: k, u: utf16.Encode([]rune(k))}
	}
	slices.SortFunc(ks, func(a, b key) int { return slices.Compare(a.u, b.u) })
	e.buf = append(e.buf, '{')
	for i, k := range ks {
		if i > 0 {
			e.buf = append(e.buf, ',')
		}
		if err := e.str(k.s); err != nil {
			return err
		}
		e.buf = append(e.buf, ':')
		if err := e.value(get(k.s), depth+1); err != nil {
			return err
		}
	}
	e.buf = append(e.buf, '}')
	return nil
}

const hexDigits = "0123456789abcdef"

func (e *encoder) str(s string) error {
	e.buf = append(e.buf, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c >= utf8.RuneSelf {
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && size == 1 {
				return notCanonical("invalid UTF-8 in string")
			}
			e.buf = append(e.buf, s[i:i+size]...)
			i += size
			continue
		}
		switch c {
		case '"':
			e.buf = append(e.buf, '\\', '"')
		case '\\':
			e.buf = append(e.buf, '\\', '\\')
		case '\b':
			e.buf = append(e.buf, '\\', 'b')
		case '\f':
			e.buf = append(e.buf, '\\', 'f')
		case '\n':
			e.buf = append(e.buf, '\\', 'n')
		case '\r':
			e.buf = append(e.buf, '\\', 'r')
		case '\t':
			e.buf = append(e.buf, '\\', 't')
		default:
			if c < 0x20 {
				e.buf = append(e.buf, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			} else {
				e.buf = append(e.buf, c)
			}
		}
		i++
	}
	e.buf = append(e.buf, '"')
	return nil
}

func (e *encoder) int(n int64) error {
	if n > maxSafeInteger || n < -maxSafeInteger {
		return notCanonical("integer beyond ±2^53")
	}
	e.buf = strconv.AppendInt(e.buf, n, 10)
	return nil
}

func (e *encoder) uint(n uint64) error {
	if n > maxSafeInteger {
		return notCanonical("integer beyond ±2^53")
	}
	e.buf = strconv.AppendUint(e.buf, n, 10)
	return nil
}

func (e *encoder) float(f float64) error {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return notCanonical("NaN or infinity")
	}
	e.buf = appendECMAScriptNumber(e.buf, f)
	return nil
}

// jsonNumber: an integer literal (no fraction, no exponent) must lie within
// ±2^53; any other literal is read as the nearest IEEE double.
func (e *encoder) jsonNumber(s string) error {
	integer, ok := jsonNumberKind(s)
	if !ok {
		return notCanonical("malformed json.Number")
	}
	if integer {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return notCanonical("integer beyond ±2^53")
		}
		return e.int(n)
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return notCanonical("number out of double range")
	}
	return e.float(f)
}

// jsonNumberKind checks s against the JSON number grammar and reports whether
// it is an integer literal.
func jsonNumberKind(s string) (integer, ok bool) {
	i := 0
	if i < len(s) && s[i] == '-' {
		i++
	}
	digits := func() int {
		start := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		return i - start
	}
	if i < len(s) && s[i] == '0' {
		i++
	} else if digits() == 0 {
		return false, false
	}
	integer = true
	if i < len(s) && s[i] == '.' {
		i++
		integer = false
		if digits() == 0 {
			return false, false
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		integer = false
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if digits() == 0 {
			return false, false
		}
	}
	return integer, i == len(s)
}

// appendECMAScriptNumber appends f formatted like ECMAScript's
// Number.prototype.toString (ES2015 7.1.12.1), as RFC 8785 requires: shortest
// round-tripping digits, plain notation for exponents in [-7, 21), otherwise
// d[.ddd]e±x; negative zero is "0". f must be finite.
func appendECMAScriptNumber(dst []byte, f float64) []byte {
	if f == 0 {
		return append(dst, '0')
	}
	if f < 0 {
		dst = append(dst, '-')
		f = -f
	}
	// Shortest digits that round-trip, in scientific form "d.ddde±xx".
	var tmp [32]byte
	sci := strconv.AppendFloat(tmp[:0], f, 'e', -1, 64)
	ePos := 0
	for sci[ePos] != 'e' {
		ePos++
	}
	exp, _ := strconv.Atoi(string(sci[ePos+1:]))
	var digits []byte
	digits = append(digits, sci[0])
	if ePos > 1 {
		digits = append(digits, sci[2:ePos]...)
	}
	k := len(digits)
	n := exp + 1 // position of the decimal point relative to the digits
	switch {
	case k <= n && n <= 21:
		dst = append(dst, digits...)
		for i := 0; i < n-k; i++ {
			dst = append(dst, '0')
		}
	case 0 < n && n <= 21:
		dst = append(dst, digits[:n]...)
		dst = append(dst, '.')
		dst = append(dst, digits[n:]...)
	case -6 < n && n <= 0:
		dst = append(dst, '0', '.')
		for i := 0; i < -n; i++ {
			dst = append(dst, '0')
		}
		dst = append(dst, digits...)
	default:
		dst = append(dst, digits[0])
		if k > 1 {
			dst = append(dst, '.')
			dst = append(dst, digits[1:]...)
		}
		dst = append(dst, 'e')
		if n-1 >= 0 {
			dst = append(dst, '+')
		}
		dst = strconv.AppendInt(dst, int64(n-1), 10)
	}
	return dst
}
