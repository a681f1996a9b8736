package salt

import (
	"bytes"
	"strings"

	"github.com/cockroachdb/errors"
)

// Decoding one event frame ({head, body}; body is tag "\n\n" data). The fast
// path makes a single pass over the frame text: locate the body's tag and data
// without building anything, filter on the tag, then decode only the data
// (strDecoder, msgpack_strdecode.go). Any failure falls back to the reference
// path (frameBody, decodeEventBody: tolerantDecoder, msgpack_decode.go), which
// gives the canonical error.

// eventSplit locates the tag and the data of a frame's body in the frame text.
type eventSplit struct{ tagLo, tagHi, dataLo, dataHi int }

// splitEventFrame parses the {head, body} frame text d.s without building any
// value and locates the body's tag and data. ok=false means "ask the
// reference decoder" (or, with d.bud.exceeded, over the budget).
func (d *strDecoder) splitEventFrame() (sp eventSplit, ok bool) {
	c, ok := d.byte1()
	if !ok {
		return eventSplit{}, false
	}
	var n int
	switch {
	case c&0xf0 == 0x80:
		n = int(c & 0x0f)
	case c == 0xde || c == 0xdf:
		if n, ok = d.length(2 << (c - 0xde)); !ok {
			return eventSplit{}, false
		}
	default:
		return eventSplit{}, false
	}
	bodyLo, bodyHi := 0, 0
	haveBody := false
	for i := 0; i < n; i++ {
		// a key is value(1): str or bin "body" selects the body
		isBody := false
		if d.off >= len(d.s) {
			return eventSplit{}, false
		}
		kc := d.s[d.off]
		d.off++
		if kn, isStr, ok := d.strHeader(kc); isStr {
			k, ok2 := d.take(kn)
			if !ok || !ok2 {
				return eventSplit{}, false
			}
			isBody = k == "body"
		} else {
			d.off--
			if !d.skip(1) {
				return eventSplit{}, false
			}
		}
		if !isBody {
			if !d.skip(1) {
				return eventSplit{}, false
			}
			continue
		}
		if d.off >= len(d.s) {
			return eventSplit{}, false
		}
		bc := d.s[d.off]
		d.off++
		bn, isStr, ok := d.strHeader(bc)
		if !isStr || !ok {
			return eventSplit{}, false
		}
		if !d.skipN(bn) {
			return eventSplit{}, false
		}
		bodyLo, bodyHi, haveBody = d.off-bn, d.off, true
	}
	if d.off != len(d.s) || !haveBody {
		return eventSplit{}, false
	}
	i := strings.Index(d.s[bodyLo:bodyHi], tagEnd)
	if i < 0 {
		return eventSplit{}, false
	}
	return eventSplit{tagLo: bodyLo, tagHi: bodyLo + i, dataLo: bodyLo + i + len(tagEnd), dataHi: bodyHi}, true
}

// fastDecodeEvent is frameBody + decodeEventBody over the frame text s, whose
// strings the event aliases. It returns the estimated bytes the decoded values
// hold (not counting s). ok=false means "ask the reference decoder", unless
// overBudget: then the frame is refused as it is.
func fastDecodeEvent(s string, lim decodeLimits) (ev Event, est int64, ok, overBudget bool) {
	bud := newDecodeBudget(lim)
	d := &strDecoder{s: s, bud: bud}
	sp, ok := d.splitEventFrame()
	if !ok {
		return Event{}, 0, false, bud.exceeded
	}
	return decodeEventData(s, sp, bud, lim)
}

// decodeEventData decodes the data of a split frame text s within bud, which
// the split already charged. s may be another copy of the text that was split.
func decodeEventData(s string, sp eventSplit, bud *decodeBudget, lim decodeLimits) (ev Event, est int64, ok, overBudget bool) {
	dd := strDecoder{s: s[sp.dataLo:sp.dataHi], bud: bud}
	mc, ok := dd.byte1()
	if !ok {
		return Event{}, 0, false, false
	}
	var n int
	switch {
	case mc&0xf0 == 0x80:
		n = int(mc & 0x0f)
	case mc == 0xde || mc == 0xdf:
		if n, ok = dd.length(2 << (mc - 0xde)); !ok {
			return Event{}, 0, false, false
		}
	default:
		return Event{}, 0, false, false // not a map (or a map inside something else)
	}
	if !bud.charge(1, costSlot) {
		return Event{}, 0, false, true
	}
	data, ok := dd.mapBody(n, 0)
	if !ok || dd.off != len(dd.s) || bud.exceeded {
		return Event{}, 0, false, bud.exceeded
	}
	return classifyEvent(s[sp.tagLo:sp.tagHi], data), bud.spent(lim), true, false
}

// fastDecodeEventFrame is fastDecodeEvent over a copy of frame, within the default limits.
func fastDecodeEventFrame(frame []byte) (Event, bool) {
	ev, _, ok, _ := fastDecodeEvent(string(frame), defaultEventDecodeLimits())
	return ev, ok
}

// decodeEventFrame decodes one event-bus frame (the msgpack map
// {head, body}, without any length prefix) into an Event, within
// defaultEventDecodeLimits.
//
// The result does not alias frame: the caller may reuse it.
func decodeEventFrame(frame []byte) (Event, error) {
	ev, _, err := decodeEventText(string(frame), frame, defaultEventDecodeLimits())
	return ev, err
}

// decodeEventText decodes the frame whose text is s (the event aliases s) and
// whose bytes are frame (read only, for the reference decoder). est is the
// estimate of what the decoded values hold beyond s.
func decodeEventText(s string, frame []byte, lim decodeLimits) (Event, int64, error) {
	ev, est, ok, over := fastDecodeEvent(s, lim)
	if ok {
		return ev, est, nil
	}
	if over {
		return Event{}, 0, budgetError("event frame too costly to decode")
	}
	// the reference decoder gives the error (or, should the fast path
	// ever refuse a valid frame, the event)
	body, err := frameBody(frame, lim)
	if err != nil {
		return Event{}, 0, err
	}
	ev, err = decodeEventBody(body, lim)
	return ev, int64(len(frame)), err
}

// frameBody returns the body of a {head, body} frame without copying it.
func frameBody(frame []byte, lim decodeLimits) ([]byte, error) {
	d := &tolerantDecoder{b: frame, bud: newDecodeBudget(lim)}
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
		return nil, errors.Wrap(errMsgpack, "event frame is not a map")
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
		return nil, errors.Wrap(errMsgpack, "trailing bytes after event frame")
	}
	if body == nil {
		return nil, errors.Wrap(errMsgpack, "event frame without body")
	}
	return body, nil
}

// decodeEventBody splits tag "\n\n" data at the first separator.
func decodeEventBody(body []byte, lim decodeLimits) (Event, error) {
	i := bytes.Index(body, []byte(tagEnd))
	if i < 0 {
		return Event{}, errors.Wrap(errMsgpack, "event body without tag separator")
	}
	tag := string(body[:i])
	dv, err := decodeValueLimited(body[i+2:], lim)
	if err != nil {
		return Event{}, errors.Wrap(err, "event data")
	}
	data, ok := dv.(map[string]any)
	if !ok {
		return Event{}, errors.Wrap(errMsgpack, "event data is not a map")
	}
	return classifyEvent(tag, data), nil
}

const tagEnd = "\n\n"
