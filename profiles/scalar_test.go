package profiles

import (
	"encoding/json"
	"errors"
	"math"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

// saltScalar is one entry of testdata/scalars.salt.json: how Salt 3006's
// loader (PyYAML 6 + libyaml + SaltYamlSafeLoader) reads "k: <plain>"
// (Salt 3006.0's own loader; testdata/saltref/README.md).
type saltScalar struct {
	Plain     string `json:"plain"`
	SaltType  string `json:"salt_type"`
	SaltValue any    `json:"salt_value"`
}

// refusedScalars are the plain scalars of scalars.salt.json that the policy
// refuses (every other one must be accepted with Salt's exact value), with
// the expected code.
var refusedScalars = map[string]errorCode{
	"yes": codeAmbiguousScalar, "Yes": codeAmbiguousScalar, "YES": codeAmbiguousScalar,
	"no": codeAmbiguousScalar, "No": codeAmbiguousScalar, "NO": codeAmbiguousScalar,
	"on": codeAmbiguousScalar, "On": codeAmbiguousScalar, "ON": codeAmbiguousScalar,
	"off": codeAmbiguousScalar, "Off": codeAmbiguousScalar, "OFF": codeAmbiguousScalar,
	"y": codeAmbiguousScalar, "Y": codeAmbiguousScalar, "n": codeAmbiguousScalar, "N": codeAmbiguousScalar,
	"0644": codeAmbiguousScalar, "00": codeAmbiguousScalar, "0o644": codeAmbiguousScalar,
	"0x1F": codeAmbiguousScalar, "0b101": codeAmbiguousScalar, "1_000": codeAmbiguousScalar,
	"1_": codeAmbiguousScalar, "1:30": codeAmbiguousScalar, "-1:30": codeAmbiguousScalar,
	"1:30:00": codeAmbiguousScalar, "190:20:30.15": codeAmbiguousScalar, "1e3": codeAmbiguousScalar,
	"1E3": codeAmbiguousScalar, "1.5e+3": codeAmbiguousScalar, "1.5e3": codeAmbiguousScalar,
	".5": codeAmbiguousScalar, "1.": codeAmbiguousScalar, "2.0": codeAmbiguousScalar,
	"-3.0": codeAmbiguousScalar, "+1": codeAmbiguousScalar, "+1.5": codeAmbiguousScalar,
	".inf": codeAmbiguousScalar, "-.inf": codeAmbiguousScalar, "+.inf": codeAmbiguousScalar,
	".Inf": codeAmbiguousScalar, ".NAN": codeAmbiguousScalar, ".nan": codeAmbiguousScalar,
	"00.5": codeAmbiguousScalar, "1_0.5": codeAmbiguousScalar, "=": codeAmbiguousScalar,
	"007": codeAmbiguousScalar, "9007199254740993": codeNumberOutOfRange,
	"-": codeSyntax,
}

func TestScalarPolicyAgainstSalt(t *testing.T) {
	var table []saltScalar
	if err := json.Unmarshal(mustRead(t, "testdata/scalars.salt.json"), &table); err != nil {
		t.Fatal(err)
	}
	accepted, refused := 0, 0
	for _, e := range table {
		src := []byte("a:\n  test.nop:\n    - k: " + e.Plain + "\n")
		c, err := CompileCustom(src)
		if code, ok := refusedScalars[e.Plain]; ok {
			var ce *CustomError
			if !errors.As(err, &ce) || ce.Code != code {
				t.Errorf("%q: got %v, want %s", e.Plain, err, code)
			}
			refused++
			continue
		}
		if err != nil {
			t.Errorf("%q: refused: %v", e.Plain, err)
			continue
		}
		got := c.HighData["a"].(map[string]any)["test"].([]any)[1].(map[string]any)["k"]
		if !sameScalar(got, e) {
			t.Errorf("%q: compiled %#v (%T), Salt reads %v %#v", e.Plain, got, got, e.SaltType, e.SaltValue)
		}
		if v12, ok := yaml12(t, e.Plain); ok && !sameValue(got, v12) {
			t.Errorf("%q: compiled %#v, YAML 1.2 (yaml.v3) reads %#v", e.Plain, got, v12)
		}
		accepted++
	}
	if accepted < 40 || refused < 40 {
		t.Fatalf("accepted %d, refused %d: the table lost cases", accepted, refused)
	}
}

func sameScalar(got any, e saltScalar) bool {
	switch e.SaltType {
	case "NoneType":
		return got == nil
	case "bool", "str":
		return got == e.SaltValue
	case "int":
		g, ok := got.(int64)
		return ok && float64(g) == e.SaltValue.(float64)
	case "float":
		g, ok := got.(float64)
		return ok && g == e.SaltValue.(float64)
	}
	return false
}

// yaml12 decodes the scalar with yaml.v3's YAML 1.2 resolution; ok is false
// for timestamps, which yaml.v3 turns into time.Time (Salt keeps the string).
func yaml12(t *testing.T, plain string) (any, bool) {
	var m map[string]any
	if err := yaml.Unmarshal([]byte("k: "+plain+"\n"), &m); err != nil {
		t.Fatalf("%q: yaml.v3: %v", plain, err)
	}
	switch v := m["k"].(type) {
	case time.Time:
		return nil, false
	case int:
		return int64(v), true
	default:
		return v, true
	}
}

func sameValue(a, b any) bool {
	if fa, ok := a.(float64); ok {
		fb, ok := b.(float64)
		return ok && (fa == fb || math.IsNaN(fa) && math.IsNaN(fb))
	}
	return a == b
}

func TestResolvePlainCandidates(t *testing.T) {
	// Plain scalars that do not start with a resolver's first character are
	// strings without any regular expression.
	for _, s := range []string{"abc", "/etc/x", "Zeta", "_1", "é", "@x"} {
		if isCandidate(s) {
			t.Errorf("%q is a candidate", s)
		}
		if v, err := resolvePlain(s, "!!str"); err != nil || v != s {
			t.Errorf("%q: %v %v", s, v, err)
		}
	}
	if _, err := resolvePlain("abc", "!!int"); err == nil || err.Code != codeAmbiguousScalar {
		t.Errorf("a yaml.v3 non-string reading must be refused, got %v", err)
	}
}
