package saltwire

import (
	"math"
	"strings"
	"time"

	"github.com/cockroachdb/errors"
)

// The event reader's fast path. One frame is copied once into a string and
// every decoded string (tag, keys, values) is a substring of it, so that a
// frame costs one allocation for all of its text instead of two per string.
// The price: any retained string of an event (its Tag too) keeps that whole
// frame's text alive; a consumer that keeps one field of many events for
// long should copy it (strings.Clone).
// It reports failure as a bare false: on any failure the caller runs
// the reference decoder (EventFrameBody, Decode) on the same bytes, which
// returns the canonical error. Success here must therefore mean exactly what
// success of the reference decoder means, with equal values
// (FuzzFastEventDecodeMatches checks both).

// strDecoder is tolerantDecoder over a string.
type strDecoder struct {
	s   string
	off int
	bud *Budget
}

func (d *strDecoder) boxString(s string) any {
	if len(s) == 0 {
		return ""
	}
	return s
}

func (d *strDecoder) boxFloat(f float64) any {
	if f == 0 && !math.Signbit(f) {
		return float64(0)
	}
	return f
}

func (d *strDecoder) byte1() (byte, bool) {
	if d.off >= len(d.s) {
		return 0, false
	}
	c := d.s[d.off]
	d.off++
	return c, true
}

// take returns the next n bytes as a substring.
func (d *strDecoder) take(n int) (string, bool) {
	if n < 0 || n > len(d.s)-d.off {
		return "", false
	}
	s := d.s[d.off : d.off+n]
	d.off += n
	return s, true
}

func (d *strDecoder) skipN(n int) bool {
	if n < 0 || n > len(d.s)-d.off {
		return false
	}
	d.off += n
	return true
}

func (d *strDecoder) uintN(n int) (uint64, bool) {
	if n > len(d.s)-d.off {
		return 0, false
	}
	s := d.s[d.off : d.off+n]
	d.off += n
	switch n {
	case 1:
		return uint64(s[0]), true
	case 2:
		return uint64(s[0])<<8 | uint64(s[1]), true
	case 4:
		return uint64(s[0])<<24 | uint64(s[1])<<16 | uint64(s[2])<<8 | uint64(s[3]), true
	}
	var u uint64
	for i := 0; i < 8; i++ {
		u = u<<8 | uint64(s[i])
	}
	return u, true
}

// length reads an n-byte length that must fit the remaining input.
func (d *strDecoder) length(n int) (int, bool) {
	u, ok := d.uintN(n)
	if !ok || u > uint64(len(d.s)-d.off) {
		return 0, false
	}
	return int(u), true
}

// strHeader reports the payload length of a str or bin header byte c
// (reading its length field), or isStr=false when c is not a str/bin
// header.
func (d *strDecoder) strHeader(c byte) (n int, isStr, ok bool) {
	switch {
	case c >= 0xa0 && c <= 0xbf:
		return int(c & 0x1f), true, true
	case c == 0xc4 || c == 0xd9:
		n, ok = d.length(1)
	case c == 0xc5 || c == 0xda:
		n, ok = d.length(2)
	case c == 0xc6 || c == 0xdb:
		n, ok = d.length(4)
	default:
		return 0, false, false
	}
	return n, true, ok
}

// value is tolerantDecoder.value.
func (d *strDecoder) value(depth int) (any, bool) {
	if !d.bud.depthOK(depth) {
		return nil, false
	}
	c, ok := d.byte1()
	if !ok {
		return nil, false
	}
	if isNumberByte(c) && !d.bud.Charge(0, costNumber) {
		return nil, false
	}
	switch {
	case c <= 0x7f:
		return int64(c), true
	case c >= 0xe0:
		return int64(int8(c)), true
	case c >= 0x90 && c <= 0x9f:
		return d.array(int(c&0x0f), depth)
	case c >= 0x80 && c <= 0x8f:
		return d.mapN(int(c&0x0f), depth)
	}
	if n, isStr, ok := d.strHeader(c); isStr {
		if !ok {
			return nil, false
		}
		if !d.bud.Charge(0, costString+int64(n)) {
			return nil, false
		}
		s, ok := d.take(n)
		if !ok {
			return nil, false
		}
		return d.boxString(s), true
	}
	switch c {
	case 0xc0:
		return nil, true
	case 0xc2:
		return false, true
	case 0xc3:
		return true, true
	case 0xca:
		u, ok := d.uintN(4)
		return d.boxFloat(float64(math.Float32frombits(uint32(u)))), ok
	case 0xcb:
		u, ok := d.uintN(8)
		return d.boxFloat(math.Float64frombits(u)), ok
	case 0xcc, 0xcd, 0xce, 0xcf:
		u, ok := d.uintN(1 << (c - 0xcc))
		if !ok {
			return nil, false
		}
		if u > math.MaxInt64 {
			return u, true
		}
		return int64(u), true
	case 0xd0:
		u, ok := d.uintN(1)
		return int64(int8(u)), ok
	case 0xd1:
		u, ok := d.uintN(2)
		return int64(int16(u)), ok
	case 0xd2:
		u, ok := d.uintN(4)
		return int64(int32(u)), ok
	case 0xd3:
		u, ok := d.uintN(8)
		return int64(u), ok
	case 0xdc, 0xdd:
		n, ok := d.length(2 << (c - 0xdc))
		if !ok {
			return nil, false
		}
		return d.array(n, depth)
	case 0xde, 0xdf:
		n, ok := d.length(2 << (c - 0xde))
		if !ok {
			return nil, false
		}
		return d.mapN(n, depth)
	case 0xd4, 0xd5, 0xd6, 0xd7, 0xd8:
		return d.ext(1<<(c-0xd4), depth)
	case 0xc7, 0xc8, 0xc9:
		n, ok := d.length(1 << (c - 0xc7))
		if !ok {
			return nil, false
		}
		return d.ext(n, depth)
	}
	return nil, false // 0xc1
}

func (d *strDecoder) array(n, depth int) (any, bool) {
	if n > len(d.s)-d.off || !d.bud.Charge(int64(n), costArray+CostSlot*int64(n)) {
		return nil, false
	}
	out := make([]any, n)
	for i := range out {
		v, ok := d.value(depth + 1)
		if !ok {
			return nil, false
		}
		out[i] = v
	}
	return out, true
}

func (d *strDecoder) mapN(n, depth int) (any, bool) {
	m, ok := d.mapBody(n, depth)
	if !ok {
		return nil, false
	}
	return m, true
}

func (d *strDecoder) mapBody(n, depth int) (map[string]any, bool) {
	if n > (len(d.s)-d.off)/2 || !d.bud.Charge(2*int64(n), mapCharge(n)) {
		return nil, false
	}
	out := make(map[string]any, min(n, maxMapHint))
	for i := 0; i < n; i++ {
		k, ok := d.key(depth + 1)
		if !ok {
			return nil, false
		}
		v, ok := d.value(depth + 1)
		if !ok {
			return nil, false
		}
		if _, dup := out[k]; !dup && len(out) >= min(n, maxMapHint) && !d.bud.Charge(0, costEntry) {
			return nil, false
		}
		out[k] = v
	}
	return out, true
}

// key decodes a map key as value then mapKeyString would, without boxing
// string keys.
func (d *strDecoder) key(depth int) (string, bool) {
	if !d.bud.depthOK(depth) || d.off >= len(d.s) {
		return "", false
	}
	save := d.off
	c := d.s[d.off]
	d.off++
	if n, isStr, ok := d.strHeader(c); isStr {
		if !ok || !d.bud.Charge(0, costString+int64(n)) {
			return "", false
		}
		return d.take(n)
	}
	d.off = save
	v, ok := d.value(depth)
	if !ok {
		return "", false
	}
	ks, err := MapKeyString(v)
	return ks, err == nil && d.bud.Charge(0, costString)
}

func (d *strDecoder) ext(n, depth int) (any, bool) {
	th, ok := d.byte1()
	if !ok {
		return nil, false
	}
	typ := int8(th)
	if !d.bud.Charge(0, costExt+int64(n)) {
		return nil, false
	}
	payload, ok := d.take(n)
	if !ok {
		return nil, false
	}
	switch typ {
	case 78:
		if t, err := time.Parse(DatetimeLayout, payload); err == nil {
			return t, true
		}
	case 79:
		inner := &strDecoder{s: payload, bud: d.bud}
		if !inner.bud.Charge(1, 0) {
			return nil, false
		}
		v, ok := inner.value(depth + 1)
		if ok && inner.off == len(payload) {
			if arr, ok := v.([]any); ok && len(arr) == 2 {
				if name, ok := arr[0].(string); ok {
					return Constant{Name: name, Value: arr[1]}, true
				}
			}
		}
	case -1:
		if t, ok := decodeTimestamp([]byte(payload)); ok {
			return t, true
		}
	}
	return Ext{Type: typ, Data: []byte(payload)}, true
}

// skip succeeds exactly when value(depth) would, without building values.
func (d *strDecoder) skip(depth int) bool {
	if !d.bud.depthOK(depth) {
		return false
	}
	c, ok := d.byte1()
	if !ok {
		return false
	}
	switch {
	case c <= 0x7f || c >= 0xe0:
		return true
	case c >= 0x90 && c <= 0x9f:
		return d.skipArray(int(c&0x0f), depth)
	case c >= 0x80 && c <= 0x8f:
		return d.skipMap(int(c&0x0f), depth)
	}
	if n, isStr, ok := d.strHeader(c); isStr {
		return ok && d.skipN(n)
	}
	switch c {
	case 0xc0, 0xc2, 0xc3:
		return true
	case 0xca, 0xd2:
		return d.skipN(4)
	case 0xcb, 0xd3:
		return d.skipN(8)
	case 0xcc, 0xcd, 0xce, 0xcf:
		return d.skipN(1 << (c - 0xcc))
	case 0xd0, 0xd1:
		return d.skipN(1 << (c - 0xd0))
	case 0xdc, 0xdd:
		n, ok := d.length(2 << (c - 0xdc))
		return ok && d.skipArray(n, depth)
	case 0xde, 0xdf:
		n, ok := d.length(2 << (c - 0xde))
		return ok && d.skipMap(n, depth)
	case 0xd4, 0xd5, 0xd6, 0xd7, 0xd8:
		return d.skipN(1) && d.skipN(1<<(c-0xd4))
	case 0xc7, 0xc8, 0xc9:
		n, ok := d.length(1 << (c - 0xc7))
		return ok && d.skipN(1) && d.skipN(n)
	}
	return false
}

func (d *strDecoder) skipArray(n, depth int) bool {
	if n > len(d.s)-d.off {
		return false
	}
	for i := 0; i < n; i++ {
		if !d.skip(depth + 1) {
			return false
		}
	}
	return true
}

func (d *strDecoder) skipMap(n, depth int) bool {
	if n > (len(d.s)-d.off)/2 {
		return false
	}
	for i := 0; i < n; i++ {
		if _, ok := d.key(depth + 1); !ok {
			return false
		}
		if !d.skip(depth + 1) {
			return false
		}
	}
	return true
}

// EventSplit locates the tag and the data of a frame's body in the frame text.
type EventSplit struct{ TagLo, TagHi, DataLo, DataHi int }

// splitEventFrame parses the {head, body} frame text d.s without building any
// value and locates the body's tag and data. ok=false means "ask the
// reference decoder" (or, with d.bud.Exceeded, over the budget).
func (d *strDecoder) splitEventFrame() (sp EventSplit, ok bool) {
	c, ok := d.byte1()
	if !ok {
		return EventSplit{}, false
	}
	var n int
	switch {
	case c&0xf0 == 0x80:
		n = int(c & 0x0f)
	case c == 0xde || c == 0xdf:
		if n, ok = d.length(2 << (c - 0xde)); !ok {
			return EventSplit{}, false
		}
	default:
		return EventSplit{}, false
	}
	bodyLo, bodyHi := 0, 0
	haveBody := false
	for i := 0; i < n; i++ {
		// a key is value(1): str or bin "body" selects the body
		isBody := false
		if d.off >= len(d.s) {
			return EventSplit{}, false
		}
		kc := d.s[d.off]
		d.off++
		if kn, isStr, ok := d.strHeader(kc); isStr {
			k, ok2 := d.take(kn)
			if !ok || !ok2 {
				return EventSplit{}, false
			}
			isBody = k == "body"
		} else {
			d.off--
			if !d.skip(1) {
				return EventSplit{}, false
			}
		}
		if !isBody {
			if !d.skip(1) {
				return EventSplit{}, false
			}
			continue
		}
		if d.off >= len(d.s) {
			return EventSplit{}, false
		}
		bc := d.s[d.off]
		d.off++
		bn, isStr, ok := d.strHeader(bc)
		if !isStr || !ok {
			return EventSplit{}, false
		}
		if !d.skipN(bn) {
			return EventSplit{}, false
		}
		bodyLo, bodyHi, haveBody = d.off-bn, d.off, true
	}
	if d.off != len(d.s) || !haveBody {
		return EventSplit{}, false
	}
	i := strings.Index(d.s[bodyLo:bodyHi], TagEnd)
	if i < 0 {
		return EventSplit{}, false
	}
	return EventSplit{TagLo: bodyLo, TagHi: bodyLo + i, DataLo: bodyLo + i + len(TagEnd), DataHi: bodyHi}, true
}

// SplitEventFrame parses the {head, body} frame text s within bud, building no value, and locates
// the body's tag and data. ok=false means "ask the reference decoder (EventFrameBody, Decode)",
// or, with bud.Exceeded, that the frame is over the budget.
func SplitEventFrame(s string, bud *Budget) (EventSplit, bool) {
	return (&strDecoder{s: s, bud: bud}).splitEventFrame()
}

// DecodeEventData decodes the data of a split frame text s within bud, which the split already
// charged; s may be another copy of the text that was split. Every string of data is a substring
// of s. ok=false means "ask the reference decoder", unless overBudget: then the frame is refused
// as it is.
func DecodeEventData(s string, sp EventSplit, bud *Budget) (data map[string]any, ok, overBudget bool) {
	dd := strDecoder{s: s[sp.DataLo:sp.DataHi], bud: bud}
	mc, ok := dd.byte1()
	if !ok {
		return nil, false, false
	}
	var n int
	switch {
	case mc&0xf0 == 0x80:
		n = int(mc & 0x0f)
	case mc == 0xde || mc == 0xdf:
		if n, ok = dd.length(2 << (mc - 0xde)); !ok {
			return nil, false, false
		}
	default:
		return nil, false, false // not a map (or a map inside something else)
	}
	if !bud.Charge(1, CostSlot) {
		return nil, false, true
	}
	data, ok = dd.mapBody(n, 0)
	if !ok || dd.off != len(dd.s) || bud.Exceeded {
		return nil, false, bud.Exceeded
	}
	return data, true, false
}

// TagEnd separates an event body's tag from its data.
const TagEnd = "\n\n"

// EventFrameBody returns the body of a {head, body} frame without copying it.
func EventFrameBody(frame []byte, lim Limits) ([]byte, error) {
	d := &tolerantDecoder{b: frame, bud: NewBudget(lim)}
	h, err := d.need(1)
	if err != nil {
		return nil, err
	}
	var n int
	switch c := h[0]; {
	case c&0xf0 == 0x80:
		n = int(c & 0x0f)
	case c == 0xde:
		n, err = d.length(2)
	case c == 0xdf:
		n, err = d.length(4)
	default:
		return nil, errors.Wrap(ErrMsgpack, "event frame is not a map")
	}
	if err != nil {
		return nil, err
	}
	var body []byte
	for i := 0; i < n; i++ {
		k, err := d.value(1)
		if err != nil {
			return nil, err
		}
		if k == "body" {
			if body, err = d.rawString(); err != nil {
				return nil, err
			}
			continue
		}
		if _, err := d.value(1); err != nil {
			return nil, err
		}
	}
	if d.off != len(frame) {
		return nil, errors.Wrap(ErrMsgpack, "trailing bytes after event frame")
	}
	if body == nil {
		return nil, errors.Wrap(ErrMsgpack, "event frame without body")
	}
	return body, nil
}
