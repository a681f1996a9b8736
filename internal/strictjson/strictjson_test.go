package strictjson

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestCheck(t *testing.T) {
	succeeded := `{"request_id":"r","phase":"terminal","status":"succeeded"}`
	cases := []struct {
		name string
		in   string
		fold bool
		want error // nil: accepted
	}{
		{"object", succeeded, false, nil},
		{"whitespace around", " \n\t" + succeeded + "\r\n ", false, nil},
		{"scalar", `42`, false, nil},
		{"nested distinct keys", `{"a":{"a":1,"b":[{"a":1},{"a":2}]},"b":[]}`, false, nil},
		{"same key in sibling objects", `[{"k":1},{"k":2}]`, false, nil},
		{"case differs without fold", `{"status":1,"Status":2}`, false, nil},
		{"empty object and array", `{"a":{},"b":[[]]}`, false, nil},
		{"appended fields", strings.TrimSuffix(succeeded, "}") + `,"status":"failed","phase":"claimed"}`, false, ErrDuplicateKey},
		{"duplicate top", `{"a":1,"a":1}`, false, ErrDuplicateKey},
		{"duplicate nested", `{"x":{"a":1,"b":2,"a":3}}`, false, ErrDuplicateKey},
		{"duplicate in array of objects", `[{"a":1},{"b":1,"b":2}]`, false, ErrDuplicateKey},
		{"duplicate by escape", `{"a":1,"\u0061":2}`, false, ErrDuplicateKey},
		{"duplicate by case with fold", `{"status":1,"Status":2}`, true, ErrDuplicateKey},
		{"duplicate by kelvin sign with fold", `{"k":1,"\u212a":2}`, true, ErrDuplicateKey},
		{"second object", succeeded + `{"status":"running"}`, false, ErrTrailingData},
		{"second scalar", `1 2`, false, ErrTrailingData},
		{"stray brace", succeeded + `}`, false, ErrTrailingData},
		{"stray bracket", succeeded + `]`, false, ErrTrailingData},
		{"garbage after", succeeded + `x`, false, ErrTrailingData},
		{"nul after", succeeded + "\x00", false, ErrTrailingData},
		{"empty", ``, false, ErrSyntax},
		{"only space", `   `, false, ErrSyntax},
		{"truncated", succeeded[:20], false, ErrSyntax},
		{"invalid utf8", "{\"a\":\"\xff\"}", false, ErrSyntax},
		{"NaN", `{"a":NaN}`, false, ErrSyntax},
		{"missing value", `{"a":}`, false, ErrSyntax},
		{"too deep", strings.Repeat("[", MaxDepth+1) + strings.Repeat("]", MaxDepth+1), false, ErrTooDeep},
		{"deep but allowed", strings.Repeat("[", MaxDepth) + strings.Repeat("]", MaxDepth), false, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var opts []Option
			if c.fold {
				opts = append(opts, FoldCase())
			}
			err := Check([]byte(c.in), opts...)
			if c.want == nil {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if !errors.Is(err, c.want) || !errors.Is(err, ErrInvalid) {
				t.Fatalf("err = %v, want %v", err, c.want)
			}
			if strings.Contains(err.Error(), "status") || strings.Contains(err.Error(), "succeeded") {
				t.Fatalf("error echoes record text: %v", err)
			}
		})
	}
}

// FuzzStrictJSON: Check never panics; whatever it accepts is one valid JSON value, and a value it accepts
// re-encodes (through encoding/json's generic form) to a record it also accepts.
func FuzzStrictJSON(f *testing.F) {
	for _, s := range []string{`{"a":1}`, `{"a":1,"a":2}`, `[{"a":{"b":1}},{"a":2}]`, `1 2`, `{"a":1}]`, `"x"`, ``} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		err := Check(data)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("untyped refusal %v", err)
			}
			return
		}
		if !json.Valid(data) {
			t.Fatalf("accepted invalid JSON %q", data)
		}
		var v any
		if err := json.Unmarshal(data, &v); err != nil {
			t.Fatalf("accepted but does not decode: %v", err)
		}
		again, err := json.Marshal(v)
		if err != nil {
			return // e.g. a number encoding/json cannot re-encode as float64
		}
		if err := Check(again); err != nil {
			t.Fatalf("re-encoded %q refused: %v", again, err)
		}
	})
}

// FuzzFastMatchesSlow: the allocation-free pass never accepts a record the token walk refuses, and both
// report the same top-level keys.
func FuzzFastMatchesSlow(f *testing.F) {
	for _, s := range []string{`{"a":1,"b":[{"a":1}]}`, `{"a":1,"A":2}`, `{"a":{"b":1,"b":2}}`, `[1,"x",{"k":null}]`,
		`{"a":"\"}","b":1}`, `{"ke\u0079":1,"key":2}`, `{}`, `{"a":1} {"a":2}`} {
		f.Add([]byte(s), false)
		f.Add([]byte(s), true)
	}
	f.Fuzz(func(t *testing.T, data []byte, fold bool) {
		if !utf8.Valid(data) || !json.Valid(data) { // Check's preconditions for the fast pass
			return
		}
		var fastKeys, slowKeys []string
		cfg := config{fold: fold, top: func(k []byte) { fastKeys = append(fastKeys, string(k)) }}
		if !fastCheck(data, &cfg) {
			return
		}
		cfg.top = func(k []byte) { slowKeys = append(slowKeys, string(k)) }
		if err := slowCheck(data, &cfg); err != nil {
			t.Fatalf("fast pass accepted %q, token walk refused: %v", data, err)
		}
		if strings.Join(fastKeys, "\x00") != strings.Join(slowKeys, "\x00") {
			t.Fatalf("top-level keys %q vs %q", fastKeys, slowKeys)
		}
	})
}

func TestCheckAllocs(t *testing.T) {
	rec := []byte(`{"protocol":1,"minion_id":"m1","request_id":"r","jid":"20261129120000000001","phase":"dispatched","passed":0,"total":0,"nested":{"a":[1,2,{"b":true}]}}`)
	var n int
	fn := TopLevelKeys(func([]byte) { n++ })
	if a := testing.AllocsPerRun(100, func() {
		if err := Check(rec, FoldCase(), fn); err != nil {
			t.Fatal(err)
		}
	}); a > 3 { // the options' config escapes (the option funcs are opaque); a race-instrumented run on a
		// busy machine has been seen at 2; the token walk this pass spares allocates dozens per record
		t.Fatalf("Check allocates %v times per record", a)
	}
	if n != 101*8 {
		t.Fatalf("top-level keys reported %d times, want %d", n, 101*8)
	}
}
