package salt

import (
	"encoding/binary"
	"errors"
	"testing"
)

// countValues counts decoded values as the budget does (map keys included) and the deepest nesting.
func countValues(v any, depth int) (n int64, deepest int) {
	n, deepest = 1, depth
	switch x := v.(type) {
	case []any:
		for _, e := range x {
			c, d := countValues(e, depth+1)
			n, deepest = n+c, max(deepest, d)
		}
	case map[string]any:
		for _, e := range x {
			c, d := countValues(e, depth+1)
			n, deepest = n+c+1, max(deepest, d)
		}
	case saltConstant:
		c, d := countValues(x.Value, depth+2)
		n, deepest = n+c+1, max(deepest, d)
	}
	return n, deepest
}

// FuzzBudgetedDecode: under any limits, the budgeted decoders never panic, never exceed their
// limits, refuse only with ErrDecodeBudget or ErrMsgpack, and agree with an unlimited decode: what
// decodes within limits decodes the same without them, and a budget refusal is only ever a
// refusal of a document that is valid (or invalid) without limits.
func FuzzBudgetedDecode(f *testing.F) {
	f.Add([]byte{0x93, 0x90, 0x80, 0xa1, 'x'}, uint16(10), uint32(1000), uint8(8))
	f.Fuzz(func(t *testing.T, b []byte, elems uint16, bytes uint32, depth uint8) {
		lim := decodeLimits{MaxElements: int64(elems) + 1, MaxBytes: int64(bytes) + 1, MaxDepth: int(depth) + 1}
		free := decodeLimits{MaxElements: 1 << 40, MaxBytes: 1 << 40, MaxDepth: 1 << 20}
		v, spent, err := decodeValueBudget(b, lim)
		ref, _, rerr := decodeValueBudget(b, free)
		if err != nil {
			if !errors.Is(err, errMsgpack) {
				t.Fatalf("error not ErrMsgpack: %v", err)
			}
			if errors.Is(err, errDecodeBudget) && rerr != nil && errors.Is(rerr, errDecodeBudget) {
				t.Fatalf("unlimited decode refused by its budget: %v", rerr)
			}
			if !errors.Is(err, errDecodeBudget) && rerr == nil {
				t.Fatalf("limited decode failed without a budget error (%v) where the unlimited one succeeds", err)
			}
		} else {
			if rerr != nil || !sameValue(v, ref) {
				t.Fatalf("limits changed the result: %v vs %v (%v)", v, ref, rerr)
			}
			if spent > lim.MaxBytes {
				t.Fatalf("spent %d over %d", spent, lim.MaxBytes)
			}
			if n, d := countValues(v, 0); n > lim.MaxElements || d > lim.MaxDepth {
				t.Fatalf("%d values, depth %d, over %+v", n, d, lim)
			}
		}
		// the event fast path under the same limits: success agrees with the reference decoder
		body := append([]byte("t\n\n"), b...)
		frame := append([]byte{0x82, 0xa4, 'h', 'e', 'a', 'd', 0x80, 0xa4, 'b', 'o', 'd', 'y', 0xc6},
			binary.BigEndian.AppendUint32(nil, uint32(len(body)))...)
		frame = append(frame, body...)
		ev, _, ok, over := fastDecodeEvent(string(frame), lim)
		if ok && over {
			t.Fatal("ok and over budget")
		}
		if ok {
			rv, _, rerr := decodeValueBudget(b, free)
			if rerr != nil || !sameValue(any(ev.Data), rv) {
				t.Fatalf("fast event decode %v, reference %v %v", ev.Data, rv, rerr)
			}
		}
		if _, _, err := decodeEventText(string(frame), frame, lim); err != nil && !errors.Is(err, errMsgpack) {
			t.Fatalf("event error not ErrMsgpack: %v", err)
		}
	})
}
