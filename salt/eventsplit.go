package salt

import "strings"

// The event reader's single pass over a frame: locate the body's tag and data
// without building anything, filter on the tag, then decode only the data.

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
