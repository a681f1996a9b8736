package profiles

import (
	"bytes"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/oduflow/oduflow-go/receipt"
)

// fuzzBudget bounds one ValidateCustom+CompileCustom call under the fuzzer's
// coverage instrumentation (plain runs take a few milliseconds at 64 KiB).
const fuzzBudget = time.Second

// FuzzValidateCustom: never panic, finish quickly, ValidateCustom and
// CompileCustom agree exactly, errors are well-formed and never echo the
// source, and accepted sources compile to well-formed, reproducible high data.
// Seeds: testdata/fuzz/FuzzValidateCustom plus the whole corpus.
//
//	go test ./profiles -run '^$' -fuzz FuzzValidateCustom -fuzztime 60s
func FuzzValidateCustom(f *testing.F) {
	files, err := filepath.Glob("testdata/custom/*/*.yaml")
	if err != nil {
		f.Fatal(err)
	}
	for _, p := range files {
		f.Add(mustRead(f, p))
	}
	codes := map[errorCode]bool{}
	for _, c := range allCodes() {
		codes[c] = true
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		verr, c, cerr := timedRun(t, src)
		if (verr == nil) != (cerr == nil) {
			t.Fatalf("ValidateCustom %v but CompileCustom %v", verr, cerr)
		}
		if cerr != nil {
			var ce, ve *CustomError
			if !errors.As(cerr, &ce) || !errors.As(verr, &ve) || *ce != *ve {
				t.Fatalf("errors differ or untyped: %#v %#v", verr, cerr)
			}
			if !codes[ce.Code] || ce.Message == "" || ce.Line < 0 || ce.Column < 0 || c != nil {
				t.Fatalf("malformed error %#v", ce)
			}
			if len(src) >= 12 && strings.Contains(ce.Error(), string(src)) {
				t.Fatalf("error echoes the source: %v", ce)
			}
			return
		}
		checkCompiled(t, src, c)
	})
}

// timedRun runs both entry points, and fails when they take longer than
// fuzzBudget three times in a row (one slow run can be a stall of a loaded
// machine or of the fuzzing engine, not of the input).
func timedRun(t *testing.T, src []byte) (verr error, c *Compiled, cerr error) {
	t.Helper()
	var slowest time.Duration
	for range 3 {
		start := time.Now()
		verr = ValidateCustom(src)
		c, cerr = CompileCustom(src)
		d := time.Since(start)
		if d <= fuzzBudget {
			return verr, c, cerr
		}
		slowest = max(slowest, d)
	}
	t.Fatalf("%d-byte input took more than %v three times (up to %v)", len(src), fuzzBudget, slowest)
	return nil, nil, nil
}

func checkCompiled(t *testing.T, src []byte, c *Compiled) {
	t.Helper()
	if len(src) > MaxSourceBytes {
		t.Fatalf("accepted %d bytes", len(src))
	}
	if c.Digest != receipt.DigestBytes(c.Canonical) {
		t.Fatal("digest does not match the canonical bytes")
	}
	again, err := receipt.CanonicalJSON(c.HighData)
	if err != nil || !bytes.Equal(again, c.Canonical) {
		t.Fatalf("canonical JSON not reproducible: %v", err)
	}
	if !json.Valid(c.Canonical) {
		t.Fatal("canonical JSON is not JSON")
	}
	if len(c.HighData) == 0 || len(c.HighData) > maxStateIDs {
		t.Fatalf("%d ids", len(c.HighData))
	}
	for id, body := range c.HighData {
		if id == "" || strings.HasPrefix(id, "__") {
			t.Fatalf("bad id %q", id)
		}
		m, ok := body.(map[string]any)
		if !ok || m["__sls__"] != customSLS || m["__env__"] != customSaltenv || len(m) < 3 {
			t.Fatalf("bad body %#v", body)
		}
		for mod, decl := range m {
			if strings.HasPrefix(mod, "__") {
				continue
			}
			list, ok := decl.([]any)
			if !ok || len(list) < 2 {
				t.Fatalf("bad declaration %#v", decl)
			}
			if fun, ok := list[0].(string); !ok || !validFunction(mod+"."+fun) {
				t.Fatalf("bad function %#v", list[0])
			}
			orders := 0
			for _, a := range list[1:] {
				am, ok := a.(map[string]any)
				if !ok || len(am) != 1 {
					t.Fatalf("bad argument %#v", a)
				}
				if _, ok := am["order"]; ok {
					orders++
				}
				if _, ok := am["parallel"]; ok {
					t.Fatal("parallel accepted")
				}
			}
			if orders != 1 {
				t.Fatalf("%d order arguments", orders)
			}
		}
	}
}

func validFunction(s string) bool {
	_, _, ok := splitFunction(s)
	return ok
}
