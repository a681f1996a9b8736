package receipt

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/errors"
)

// RFC 8785 Appendix B: IEEE-754 bit patterns and their required JCS form.
func TestECMAScriptNumberRFC8785AppendixB(t *testing.T) {
	t.Parallel()
	cases := []struct{ bits, want string }{
		{"0000000000000000", "0"},
		{"8000000000000000", "0"},
		{"0000000000000001", "5e-324"},
		{"8000000000000001", "-5e-324"},
		{"7fefffffffffffff", "1.7976931348623157e+308"},
		{"ffefffffffffffff", "-1.7976931348623157e+308"},
		{"4340000000000000", "9007199254740992"},
		{"c340000000000000", "-9007199254740992"},
		{"4430000000000000", "295147905179352830000"},
		{"44b52d02c7e14af5", "9.999999999999997e+22"},
		{"44b52d02c7e14af6", "1e+23"},
		{"44b52d02c7e14af7", "1.0000000000000001e+23"},
		{"444b1ae4d6e2ef4e", "999999999999999700000"},
		{"444b1ae4d6e2ef4f", "999999999999999900000"},
		{"444b1ae4d6e2ef50", "1e+21"},
		{"3eb0c6f7a0b5ed8c", "9.999999999999997e-7"},
		{"3eb0c6f7a0b5ed8d", "0.000001"},
		{"41b3de4355555553", "333333333.3333332"},
		{"41b3de4355555554", "333333333.33333325"},
		{"41b3de4355555555", "333333333.3333333"},
		{"41b3de4355555556", "333333333.3333334"},
		{"41b3de4355555557", "333333333.33333343"},
		{"becbf647612f3696", "-0.0000033333333333333333"},
		{"43143ff3c1cb0959", "1424953923781206.2"},
	}
	for _, c := range cases {
		u, err := strconv.ParseUint(c.bits, 16, 64)
		if err != nil {
			t.Fatal(err)
		}
		f := math.Float64frombits(u)
		got, err := CanonicalJSON(f)
		if err != nil || string(got) != c.want {
			t.Errorf("%s: got %s, %v; want %s", c.bits, got, err, c.want)
		}
	}
	for _, bits := range []string{"7fffffffffffffff", "7ff0000000000000", "fff0000000000000"} {
		u, _ := strconv.ParseUint(bits, 16, 64)
		if _, err := CanonicalJSON(math.Float64frombits(u)); !errors.Is(err, errNotCanonical) {
			t.Errorf("%s: err = %v, want errNotCanonical", bits, err)
		}
	}
}

type named string
type namedMap map[string]int

func TestCanonicalJSONGoTypes(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		in   any
		want string
	}{
		{"nil", nil, "null"},
		{"ints", []any{int8(-8), int16(16), int32(-32), int64(64), 7, uint(1), uint8(8), uint16(16), uint32(32), uint64(64)}, "[-8,16,-32,64,7,1,8,16,32,64]"},
		{"floats", []any{float32(0.5), float32(0.1), 0.1, math.Copysign(0, -1), 1e21, 1e-7}, "[0.5,0.10000000149011612,0.1,0,1e+21,1e-7]"},
		{"max safe ints", []any{int64(maxSafeInteger), int64(-maxSafeInteger), uint64(maxSafeInteger)}, "[9007199254740992,-9007199254740992,9007199254740992]"},
		{"json numbers", []any{json.Number("-0"), json.Number("1.50"), json.Number("1E2"), json.Number("9007199254740992"), json.Number("-12")}, "[0,1.5,100,9007199254740992,-12]"},
		{"map any any", map[any]any{"b": 1, "a": map[any]any{"d": nil, "c": true}}, `{"a":{"c":true,"d":null},"b":1}`},
		{"typed containers", map[string][]string{"k": {"x", "y"}}, `{"k":["x","y"]}`},
		{"named types", []any{named("n"), namedMap{"z": 1, "a": 2}, Profile("custom"), StatusFailed}, `["n",{"a":2,"z":1},"custom","failed"]`},
		{"pointer", func() any { s := "p"; return &s }(), `"p"`},
		{"nil slice and map", []any{[]string(nil), map[string]int(nil), (*int)(nil)}, "[null,null,null]"},
		{"array", [2]int{1, 2}, "[1,2]"},
		{"escapes", "\x00\x1f\x7f\"\\/\u2028é😀", `"\u0000\u001f` + "\x7f" + `\"\\/` + "\u2028é😀" + `"`},
		{"utf16 key order", map[string]any{"\uffff": 1, "😀": 2, "\ue000": 3}, "{\"😀\":2,\"\ue000\":3,\"\uffff\":1}"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := CanonicalJSON(c.in)
			if err != nil || string(got) != c.want {
				t.Fatalf("got %s, %v; want %s", got, err, c.want)
			}
		})
	}
}

func TestCanonicalJSONRefuses(t *testing.T) {
	t.Parallel()
	deep := any("x")
	for i := 0; i < maxDepth+2; i++ {
		deep = []any{deep}
	}
	cyclic := map[string]any{}
	cyclic["self"] = cyclic
	cases := map[string]any{
		"NaN":                math.NaN(),
		"+Inf":               math.Inf(1),
		"float32 Inf":        float32(math.Inf(-1)),
		"int beyond 2^53":    int64(maxSafeInteger + 1),
		"int below -2^53":    -maxSafeInteger - 1,
		"uint64 max":         uint64(math.MaxUint64),
		"json int too big":   json.Number("9007199254740993"),
		"json int huge":      json.Number("100000000000000000000000"),
		"json float too big": json.Number("1e400"),
		"json malformed":     json.Number("0x10"),
		"json leading zero":  json.Number("01"),
		"json empty":         json.Number(""),
		"invalid utf8":       "a\xffb",
		"surrogate utf8":     "\xed\xa0\x80",
		"invalid utf8 key":   map[string]any{"\xff": 1},
		"non-string key":     map[any]any{1: "x"},
		"int-keyed map":      map[int]string{1: "x"},
		"bytes":              []byte("x"),
		"channel":            make(chan int),
		"struct":             struct{ A int }{1},
		"too deep":           deep,
		"cyclic":             cyclic,
	}
	for name, v := range cases {
		t.Run(name, func(t *testing.T) {
			if out, err := CanonicalJSON(v); !errors.Is(err, errNotCanonical) {
				t.Fatalf("got %q, %v; want errNotCanonical", out, err)
			}
			if _, err := digestOf(v); err == nil {
				t.Fatal("Digest accepted it")
			}
		})
	}
}

func TestJSONNumberKind(t *testing.T) {
	t.Parallel()
	for s, want := range map[string][2]bool{
		"0": {true, true}, "-0": {true, true}, "10": {true, true}, "1.0": {false, true}, "1e5": {false, true},
		"1E+5": {false, true}, "-1.5e-3": {false, true}, "01": {false, false}, "1.": {false, false},
		".5": {false, false}, "+1": {false, false}, "1e": {false, false}, "-": {false, false}, "": {false, false},
		"1 ": {false, false}, "NaN": {false, false},
	} {
		i, ok := jsonNumberKind(s)
		if ok != want[1] || (ok && i != want[0]) {
			t.Errorf("%q: integer=%v ok=%v, want %v", s, i, ok, want)
		}
	}
}

func TestDigestKnownValue(t *testing.T) {
	t.Parallel()
	// sha256("{}") is a well-known constant.
	d, err := digestOf(map[string]any{})
	if err != nil || d != "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a" {
		t.Fatalf("digestOf({}) = %s, %v", d, err)
	}
	if strings.ToLower(d) != d || len(d) != 64 {
		t.Fatal("digest not lowercase hex")
	}
}
