package receipt

import (
	"bytes"
	"encoding/json"
	"io"
	"slices"
	"testing"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/cockroachdb/errors"
	"github.com/vmihailenco/msgpack/v5"
)

var knownReasons = map[string]bool{
	reasonBadJSON: true, reasonDuplicateKey: true, reasonUnknownKey: true, reasonMissingKey: true,
	reasonWrongType: true, reasonBadProtocol: true, reasonBadMinionID: true, reasonBadRequestID: true,
	reasonBadJID: true, reasonBadProfile: true, reasonBadStatus: true, reasonBadCode: true, reasonBadDigest: true,
	reasonCounts: true,
}

func FuzzDecode(f *testing.F) {
	for _, c := range loadCases[receiptCase](f, "receipt-cases.json") {
		f.Add([]byte(c.JSON))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := Decode(data)
		if err != nil {
			var ie *InvalidReceiptError
			if !errors.As(err, &ie) || !knownReasons[ie.Reason] || !errors.Is(err, ErrInvalidReceipt) {
				t.Fatalf("unexpected error %v", err)
			}
			return
		}
		enc, err := r.Encode()
		if err != nil {
			t.Fatalf("valid receipt does not encode: %v", err)
		}
		back, err := Decode(enc)
		if err != nil || back != r {
			t.Fatalf("round trip: %+v, %v", back, err)
		}
		enc2, _ := back.Encode()
		if !bytes.Equal(enc, enc2) {
			t.Fatal("encoding not deterministic")
		}
		if !r.Status.Valid() || !r.Profile.ValidName() || ValidateMinionID(r.MinionID) != nil || r.Passed > r.Total || r.Passed < 0 {
			t.Fatalf("invalid receipt accepted: %+v", r)
		}
	})
}

// decodeMsgpack decodes data into any, with map[string]any maps (the default)
// or map[any]any maps; it reports false for inputs the decoder refuses,
// panics on (unhashable keys) or would over-allocate for (see
// plausibleMsgpack), which are the decoder's business, not Reduce's.
func decodeMsgpack(data []byte, untyped bool) (v any, ok bool) {
	if !plausibleMsgpack(data) {
		return nil, false
	}
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	dec := msgpack.NewDecoder(bytes.NewReader(data))
	if untyped {
		dec.SetMapDecoder(func(d *msgpack.Decoder) (any, error) { return d.DecodeUntypedMap() })
	}
	if err := dec.Decode(&v); err != nil {
		return nil, false
	}
	return v, true
}

func checkSummary(t *testing.T, s Summary) {
	t.Helper()
	switch s.Status {
	case StatusUnknown:
		if s.Passed != 0 || s.Total != 0 {
			t.Fatalf("unknown with counts: %+v", s)
		}
	case StatusSucceeded:
		if s.Total < 1 || s.Passed != s.Total {
			t.Fatalf("bad succeeded: %+v", s)
		}
	case StatusFailed:
		if s.Total < 1 || s.Passed < 0 || s.Passed >= s.Total {
			t.Fatalf("bad failed: %+v", s)
		}
	default:
		t.Fatalf("Reduce returned status %q", s.Status)
	}
}

func FuzzReduce(f *testing.F) {
	for _, c := range loadCases[reduceCase](f, "reduce-cases.json") {
		var v any
		if err := json.Unmarshal(c.Return, &v); err != nil {
			f.Fatal(err)
		}
		b, err := msgpack.Marshal(v)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, untyped := range []bool{false, true} {
			v, ok := decodeMsgpack(data, untyped)
			if !ok {
				continue
			}
			s := Reduce(v)
			checkSummary(t, s)
			if s2 := Reduce(v); s2 != s {
				t.Fatalf("not deterministic: %+v vs %+v", s, s2)
			}
			// A successful reduction must be a valid receipt's figures.
			r := goodReceipt()
			r.Status, r.Passed, r.Total = s.Status, s.Passed, s.Total
			if err := r.Validate(); err != nil {
				t.Fatalf("summary %+v makes an invalid receipt: %v", s, err)
			}
		}
	})
}

func FuzzCanonicalJSON(f *testing.F) {
	for _, c := range loadCases[digestCase](f, "digest-cases.json") {
		f.Add([]byte(c.Input))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			return
		}
		out, err := CanonicalJSON(v)
		if err != nil {
			if !errors.Is(err, errNotCanonical) {
				t.Fatalf("unexpected error %v", err)
			}
			return
		}
		if !utf8.Valid(out) || !json.Valid(out) {
			t.Fatalf("output is not valid UTF-8 JSON: %q", out)
		}
		checkSortedKeys(t, out)
		// Fixed point, reading numbers back as doubles.
		var back any
		if err := json.Unmarshal(out, &back); err != nil {
			t.Fatal(err)
		}
		again, err := CanonicalJSON(back)
		if err != nil || !bytes.Equal(again, out) {
			t.Fatalf("not a fixed point:\n%s\n%s (%v)", out, again, err)
		}
		if Digest(out) != mustDigest(t, v) {
			t.Fatal("Digest disagrees with Digest(CanonicalJSON)")
		}
	})
}

func mustDigest(t *testing.T, v any) string {
	d, err := digestOf(v)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// checkSortedKeys walks canonical JSON tokens and checks that each object's
// member names strictly increase in UTF-16 code unit order and that there is
// no whitespace outside strings.
func checkSortedKeys(t *testing.T, out []byte) {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(out))
	type frame struct {
		object  bool
		wantKey bool
		last    []uint16
		first   bool
	}
	var stack []frame
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if len(stack) > 0 && stack[len(stack)-1].object {
			top := &stack[len(stack)-1]
			if top.wantKey {
				if d, ok := tok.(json.Delim); ok && d == '}' {
					stack = stack[:len(stack)-1]
					continue
				}
				k := utf16.Encode([]rune(tok.(string)))
				if !top.first && slices.Compare(top.last, k) >= 0 {
					t.Fatalf("keys out of order in %s", out)
				}
				top.last, top.first, top.wantKey = k, false, false
				continue
			}
			top.wantKey = true
		}
		if d, ok := tok.(json.Delim); ok {
			switch d {
			case '{':
				stack = append(stack, frame{object: true, wantKey: true, first: true})
			case '[':
				stack = append(stack, frame{})
			case ']':
				stack = stack[:len(stack)-1]
			}
		}
	}
	for _, c := range []byte{' ', '\n', '\r', '\t'} {
		inString := false
		for i := 0; i < len(out); i++ {
			switch {
			case out[i] == '\\' && inString:
				i++
			case out[i] == '"':
				inString = !inString
			case out[i] == c && !inString:
				t.Fatalf("whitespace outside strings in %s", out)
			}
		}
	}
}
