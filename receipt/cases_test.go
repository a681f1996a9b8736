package receipt

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/cockroachdb/errors"
)

// The three case files are shared with the Python module's tests; a case
// added there is checked in both languages.

type reduceCase struct {
	Name   string          `json:"name"`
	Return json.RawMessage `json:"return"`
	Expect struct {
		Status string `json:"status"`
		Passed int    `json:"passed"`
		Total  int    `json:"total"`
	} `json:"expect"`
}

type receiptCase struct {
	Name      string `json:"name"`
	JSON      string `json:"json"`
	Valid     bool   `json:"valid"`
	Reason    string `json:"reason"`
	Canonical string `json:"canonical"`
}

type digestCase struct {
	Name      string `json:"name"`
	Input     string `json:"input"`
	Canonical string `json:"canonical"`
	SHA256    string `json:"sha256"`
}

func loadCases[T any](t testing.TB, file string) []T {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", file))
	if err != nil {
		t.Fatal(err)
	}
	var out []T
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&out); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return out
}

// decodeJSONValue decodes JSON the way the cases are specified: numbers kept
// as json.Number so integers stay integers.
func decodeJSONValue(t testing.TB, data []byte) any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("decode %q: %v", data, err)
	}
	return v
}

func TestReduceCases(t *testing.T) {
	t.Parallel()
	cases := loadCases[reduceCase](t, "reduce-cases.json")
	if len(cases) < 25 {
		t.Fatalf("only %d reduce cases", len(cases))
	}
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			want := Summary{Status: Status(c.Expect.Status), Passed: c.Expect.Passed, Total: c.Expect.Total}
			v := decodeJSONValue(t, c.Return)
			if got := Reduce(v); got != want {
				t.Errorf("Reduce = %+v, want %+v", got, want)
			}
			// The same value as msgpack decoders hand it over: map[any]any.
			if got := Reduce(toAnyKeyed(v)); got != want {
				t.Errorf("Reduce(map[any]any form) = %+v, want %+v", got, want)
			}
		})
	}
}

// toAnyKeyed converts every map[string]any into map[any]any, recursively.
func toAnyKeyed(v any) any {
	switch x := v.(type) {
	case map[string]any:
		m := make(map[any]any, len(x))
		for k, e := range x {
			m[k] = toAnyKeyed(e)
		}
		return m
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = toAnyKeyed(e)
		}
		return out
	}
	return v
}

func TestReceiptCases(t *testing.T) {
	t.Parallel()
	cases := loadCases[receiptCase](t, "receipt-cases.json")
	if len(cases) < 30 {
		t.Fatalf("only %d receipt cases", len(cases))
	}
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			r, err := Decode([]byte(c.JSON))
			if !c.Valid {
				var ie *InvalidReceiptError
				if !errors.As(err, &ie) || !errors.Is(err, ErrInvalidReceipt) {
					t.Fatalf("Decode error = %v, want *InvalidReceiptError", err)
				}
				if ie.Reason != c.Reason {
					t.Fatalf("reason = %q, want %q", ie.Reason, c.Reason)
				}
				return
			}
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			enc, err := r.Encode()
			if err != nil {
				t.Fatalf("Encode: %v", err)
			}
			if string(enc) != c.Canonical {
				t.Fatalf("Encode = %s\nwant     %s", enc, c.Canonical)
			}
			// FromValue on the decoded value agrees with Decode.
			r2, err := FromValue(decodeJSONValue(t, []byte(c.JSON)))
			if err != nil || r2 != r {
				t.Fatalf("FromValue = %+v, %v; want %+v", r2, err, r)
			}
		})
	}
}

func TestDigestCases(t *testing.T) {
	t.Parallel()
	cases := loadCases[digestCase](t, "digest-cases.json")
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			v := decodeJSONValue(t, []byte(c.Input))
			got, err := CanonicalJSON(v)
			if err != nil {
				t.Fatalf("CanonicalJSON: %v", err)
			}
			if string(got) != c.Canonical {
				t.Fatalf("canonical = %s\nwant        %s", got, c.Canonical)
			}
			d, err := digestOf(v)
			if err != nil || d != c.SHA256 {
				t.Fatalf("Digest = %s, %v; want %s", d, err, c.SHA256)
			}
			if Digest([]byte(c.Canonical)) != c.SHA256 {
				t.Fatalf("Digest mismatch")
			}
			// Canonical form is a fixed point when read back as doubles (an
			// integer literal beyond 2^53, e.g. 1e20 printed in full, is an
			// error as json.Number, by design).
			var asFloats any
			if err := json.Unmarshal(got, &asFloats); err != nil {
				t.Fatal(err)
			}
			again, err := CanonicalJSON(asFloats)
			if err != nil || !bytes.Equal(again, got) {
				t.Fatalf("not idempotent: %s, %v", again, err)
			}
		})
	}
}
