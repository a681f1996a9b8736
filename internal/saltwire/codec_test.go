package saltwire

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// codecValues covers every type Append knows, at every length boundary of every header.
func codecValues() []any {
	deep := any("leaf")
	for range maxEncodeDepth {
		deep = []any{deep}
	}
	tooDeep := []any{deep}
	values := []any{
		nil, true, false, "", "a", "\xff\xfe not utf-8", []byte(nil), []byte{}, []byte{0, 1, 2},
		0, 1, 127, 128, 255, 256, 65535, 65536, math.MaxUint32, math.MaxUint32 + 1, math.MaxInt64,
		-1, -32, -33, -128, -129, -32768, -32769, math.MinInt32, math.MinInt32 - 1, math.MinInt64,
		int8(-5), int16(300), int32(-70000), int64(1 << 40), uint(7), uint8(200), uint16(60000),
		uint32(1 << 31), uint64(math.MaxUint64), 0.0, math.Copysign(0, -1), 1.5, math.Inf(-1),
		float32(2.25), math.NaN(),
		(*OrderedMap)(nil), &OrderedMap{}, NewOrderedMap(0).Set("cmd", "_return").Set("id", "m1").Set("return", true),
		&OrderedMap{Keys: []any{int64(1), true, nil}, Vals: []any{"one", "yes", "none"}},
		[]any{}, []any{1, "two", []any{3.0}}, []string{}, []string{"a", strings.Repeat("b", 40)},
		map[string]any{}, map[string]any{"z": 1, "a": []any{nil}, "\xff": "bin key"},
		deep, tooDeep,
		time.Date(2026, 12, 2, 1, 2, 3, 4000, time.UTC), Ext{Type: 79, Data: []byte("x")},
		Ext{Type: 5, Data: make([]byte, 16)}, Ext{Type: 6, Data: make([]byte, 300)},
		[]map[string]any{{"a": 1}}, map[string]string{"k": "v"}, map[int]string{2: "b", 1: "a"},
		[]int{1, 2}, [2]string{"x", "y"}, ptr("pointed"), (*string)(nil),
		struct{}{}, make(chan int), func() {},
	}
	for _, n := range []int{15, 16, 31, 32, 255, 256, 65535, 65536} {
		values = append(values, strings.Repeat("s", n), []byte(strings.Repeat("b", n)),
			make([]any, n), make([]string, n))
		m := &OrderedMap{} // keys need not be distinct for the encoding; Set would be quadratic
		for i := range n {
			m.Keys, m.Vals = append(m.Keys, "k"), append(m.Vals, i)
		}
		values = append(values, m)
	}
	return values
}

func ptr[T any](v T) *T { return &v }

// TestAppendMatchesReference: in both dialects Append writes exactly the reference's bytes
// (msgpack/v5 walked the simulator's old way) for every value, and refuses what it refuses.
func TestAppendMatchesReference(t *testing.T) {
	for _, d := range []Dialect{Request, Event} {
		for i, v := range codecValues() {
			want, wantErr := refPack(v, d)
			got, err := Marshal(d, v)
			switch {
			case (err != nil) != (wantErr != nil):
				t.Errorf("dialect %d value %d (%T): err %v, reference %v", d, i, v, err, wantErr)
			case err == nil && !bytes.Equal(got, want):
				t.Errorf("dialect %d value %d (%T): % x, reference % x", d, i, v, head(got), head(want))
			}
		}
	}
}

// TestDialects: the two dialects differ exactly where Salt's differ.
func TestDialects(t *testing.T) {
	for _, c := range []struct {
		v            any
		request, evt string
	}{
		{strings.Repeat("s", 32), "da0020", "d920"},
		{[]byte("ab"), "a2", "c402"},
		{"\xff", "a1", "c401"},
		{"ab", "a2", "a2"},
	} {
		for d, want := range map[Dialect]string{Request: c.request, Event: c.evt} {
			b, err := Marshal(d, c.v)
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.TrimSuffix(hex(b), hex([]byte(toString(c.v)))); got != want {
				t.Errorf("dialect %d, %q: header %s, want %s", d, c.v, got, want)
			}
		}
	}
}

func toString(v any) string {
	if b, ok := v.([]byte); ok {
		return string(b)
	}
	return v.(string)
}

func hex(b []byte) string {
	const digits = "0123456789abcdef"
	out := make([]byte, 0, 2*len(b))
	for _, c := range b {
		out = append(out, digits[c>>4], digits[c&15])
	}
	return string(out)
}

func head(b []byte) []byte {
	if len(b) > 24 {
		return b[:24]
	}
	return b
}

// generous are limits no test document reaches: DecodeOrdered against the reference compares
// decoding, not budgets.
var generous = Limits{MaxElements: 1 << 40, MaxBytes: 1 << 50, MaxDepth: 100}

// codecSeeds are the fuzz seeds: the captured vectors of real Salt (request channel and event
// bus) and a few hand-made edges.
func codecSeeds(f *testing.F) {
	for _, dir := range []string{"../../salt/salttest/testdata/eventbus", "../../salt/salttest/testdata/clear",
		"../../salt/testdata/vectors/clear", "../../salt/testdata/vectors/eventbus", "../../salt/testdata/vectors/wire"} {
		files, _ := filepath.Glob(filepath.Join(dir, "*"))
		for _, p := range files {
			if b, err := os.ReadFile(p); err == nil && len(b) < 1<<16 {
				f.Add(b)
			}
		}
	}
	f.Add([]byte{0x93, 0xc0, 0xc3, 0xd9, 0x01, 'x'})
	f.Add([]byte{0x82, 0x01, 0xa1, 'a', 0xa1, 'k', 0xc4, 0x01, 0xff})
	f.Add([]byte{0xc7, 0x02, 0x4e, '2', '0'})
}

// FuzzDecodeOrderedMatchesReference: DecodeOrdered accepts exactly the documents the reference
// decoder accepts, with the same values and the same length.
func FuzzDecodeOrderedMatchesReference(f *testing.F) {
	codecSeeds(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		want, wn, wantErr := refUnpackPrefix(b, generous.MaxDepth+1)
		got, n, err := DecodeOrdered(b, generous, nil)
		if (err != nil) != (wantErr != nil) {
			t.Fatalf("err %v, reference %v", err, wantErr)
		}
		if err != nil {
			return
		}
		if n != wn || !same(got, want) {
			t.Fatalf("decoded %d bytes %#v, reference %d bytes %#v", n, got, wn, want)
		}
	})
}

// FuzzAppendMatchesReference: every document the simulator decodes re-encodes, in both
// dialects, exactly as through the reference.
func FuzzAppendMatchesReference(f *testing.F) {
	codecSeeds(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		v, _, err := DecodeOrdered(b, generous, nil)
		if err != nil {
			return
		}
		for _, d := range []Dialect{Request, Event} {
			want, wantErr := refPack(v, d)
			got, err := Marshal(d, v)
			if (err != nil) != (wantErr != nil) || (err == nil && !bytes.Equal(got, want)) {
				t.Fatalf("dialect %d: % x (%v), reference % x (%v)", d, got, err, want, wantErr)
			}
		}
	})
}

// same is reflect.DeepEqual with NaN equal to NaN.
func same(a, b any) bool {
	switch x := a.(type) {
	case float64:
		y, ok := b.(float64)
		return ok && (x == y && math.Signbit(x) == math.Signbit(y) || math.IsNaN(x) && math.IsNaN(y))
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !same(x[i], y[i]) {
				return false
			}
		}
		return true
	case *OrderedMap:
		y, ok := b.(*OrderedMap)
		return ok && same(x.Keys, y.Keys) && same(x.Vals, y.Vals)
	}
	return reflect.DeepEqual(a, b)
}
