package salt

import (
	"bytes"

	"github.com/cockroachdb/errors"

	"github.com/oduflow/oduflow-go/internal/saltwire"
)

// Decoding one event frame ({head, body}; body is tag "\n\n" data). The fast path
// (saltwire.SplitEventFrame, saltwire.DecodeEventData) makes a single pass over the frame text:
// locate the body's tag and data without building anything, filter on the tag, then decode only
// the data. Any failure falls back to the reference path (saltwire.EventFrameBody,
// decodeEventBody: saltwire.Decode), which gives the canonical error.

// eventSplit locates the tag and the data of a frame's body in the frame text.
type eventSplit = saltwire.EventSplit

// fastDecodeEvent is frameBody + decodeEventBody over the frame text s, whose strings the event
// aliases. It returns the estimated bytes the decoded values hold (not counting s). ok=false
// means "ask the reference decoder", unless overBudget: then the frame is refused as it is.
func fastDecodeEvent(s string, lim decodeLimits) (ev Event, est int64, ok, overBudget bool) {
	bud := saltwire.NewBudget(lim)
	sp, ok := saltwire.SplitEventFrame(s, bud)
	if !ok {
		return Event{}, 0, false, bud.Exceeded
	}
	return decodeEventData(s, sp, bud, lim)
}

// decodeEventData decodes the data of a split frame text s within bud, which the split already
// charged. s may be another copy of the text that was split.
func decodeEventData(s string, sp eventSplit, bud *decodeBudget, lim decodeLimits) (ev Event, est int64, ok, overBudget bool) {
	data, ok, over := saltwire.DecodeEventData(s, sp, bud)
	if !ok {
		return Event{}, 0, false, over
	}
	return classifyEvent(s[sp.TagLo:sp.TagHi], data), bud.Spent(lim), true, false
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
	body, err := saltwire.EventFrameBody(frame, lim)
	return body, wireDecodeError(err)
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

const tagEnd = saltwire.TagEnd
