package profiles

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// The corpus (testdata/custom, written by testdata/saltref/make_corpus.py):
//
//	accept/<name>.yaml       must compile; accept/<name>.salt.json is what Salt
//	                         3006's loader and render_state produce from the same
//	                         file (Salt 3006.0's own loader, PyYAML+libyaml; testdata/saltref/README.md),
//	                         normalized as documented there.
//	reject/<code>__<name>.yaml must be refused with <code>, at the position that
//	                         manifest.json records.
//
// PROFILES_UPDATE_MANIFEST=1 rewrites manifest.json from the observed positions
// (review the diff).

type position struct {
	Line   int `json:"line"`
	Column int `json:"column"`
}

const manifestPath = "testdata/custom/manifest.json"

func TestCorpusAccept(t *testing.T) {
	files, err := filepath.Glob("testdata/custom/accept/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 30 {
		t.Fatalf("accept corpus has %d files, want >= 30", len(files))
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			src := mustRead(t, f)
			if err := ValidateCustom(src); err != nil {
				t.Fatalf("ValidateCustom: %v", err)
			}
			c, err := CompileCustom(src)
			if err != nil {
				t.Fatalf("CompileCustom: %v", err)
			}
			golden := mustRead(t, strings.TrimSuffix(f, ".yaml")+".salt.json")
			dec := json.NewDecoder(bytes.NewReader(golden))
			dec.UseNumber()
			var want any
			if err := dec.Decode(&want); err != nil {
				t.Fatal(err)
			}
			if err := sameAsSalt(c.HighData, want, "$"); err != nil {
				t.Fatalf("differs from Salt's render: %v", err)
			}
			if len(c.Digest) != 64 || strings.Trim(c.Digest, "0123456789abcdef") != "" {
				t.Fatalf("digest %q is not lowercase hex SHA-256", c.Digest)
			}
		})
	}
}

func TestCorpusReject(t *testing.T) {
	files, err := filepath.Glob("testdata/custom/reject/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 30 {
		t.Fatalf("reject corpus has %d files, want >= 30", len(files))
	}
	manifest := map[string]position{}
	if err := json.Unmarshal(mustRead(t, manifestPath), &manifest); err != nil && os.Getenv("PROFILES_UPDATE_MANIFEST") == "" {
		t.Fatal(err)
	}
	observed := map[string]position{}
	codes := map[errorCode]int{}
	for _, f := range files {
		name := "reject/" + filepath.Base(f)
		wantCode := errorCode(strings.SplitN(filepath.Base(f), "__", 2)[0])
		t.Run(filepath.Base(f), func(t *testing.T) {
			src := mustRead(t, f)
			verr := ValidateCustom(src)
			c, err := CompileCustom(src)
			if c != nil || err == nil || verr == nil {
				t.Fatalf("accepted (validate err %v)", verr)
			}
			var ce, ve *CustomError
			if !errors.As(err, &ce) || !errors.As(verr, &ve) {
				t.Fatalf("error %T is not a *CustomError", err)
			}
			if !errors.Is(err, ErrInvalidCustom) {
				t.Fatalf("errors.Is(ErrInvalidCustom) false")
			}
			if *ce != *ve {
				t.Fatalf("ValidateCustom %+v != CompileCustom %+v", ve, ce)
			}
			if ce.Code != wantCode {
				t.Fatalf("code %s (%s), want %s", ce.Code, ce.Message, wantCode)
			}
			got := position{ce.Line, ce.Column}
			observed[name] = got
			if want, ok := manifest[name]; os.Getenv("PROFILES_UPDATE_MANIFEST") == "" && (!ok || want != got) {
				t.Fatalf("position %+v, manifest says %+v (present %v)", got, want, ok)
			}
			codes[ce.Code]++
		})
	}
	if os.Getenv("PROFILES_UPDATE_MANIFEST") != "" {
		writeManifest(t, observed)
		return
	}
	for name := range manifest {
		if _, err := os.Stat(filepath.Join("testdata/custom", name)); err != nil {
			t.Errorf("manifest names a missing file %s", name)
		}
	}
	for _, code := range allCodes() {
		if code == codeNotCanonical || code == codeTooLarge {
			continue // unreachable / covered by TestLimits (a >64 KiB file is not kept in the corpus)
		}
		if codes[code] == 0 {
			t.Errorf("no corpus source for code %s", code)
		}
	}
}

func writeManifest(t *testing.T, m map[string]position) {
	t.Helper()
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b bytes.Buffer
	b.WriteString("{\n")
	for i, k := range keys {
		sep := ","
		if i == len(keys)-1 {
			sep = ""
		}
		fmt.Fprintf(&b, "  %q: {\"line\": %d, \"column\": %d}%s\n", k, m[k].Line, m[k].Column, sep)
	}
	b.WriteString("}\n")
	if err := os.WriteFile(manifestPath, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

func allCodes() []errorCode {
	return []errorCode{
		codeTooLarge, codeInvalidUTF8, codeInvalidCharacter, codeTemplateSyntax, codeRendererDirective,
		codeYAMLDirective, codeSyntax, codeMultipleDocuments, codeEmptyDocument, codeNotMapping, codeAnchor,
		codeAlias, codeExplicitTag, codeMergeKey, codeDuplicateKey, codeTooDeep, codeTooManyIDs, codeTooManyItems,
		codeScalarTooLong, codeNonStringKey, codeAmbiguousScalar, codeNumberOutOfRange, codeForbiddenDeclaration,
		codeInvalidID, codeInvalidState, codeInvalidFunction, codeDuplicateModule, codeArgumentsNotList,
		codeInvalidArgument, codeDuplicateArgument, codeReservedArgument, codeParallel, codeInvalidRequisite, codeRequisiteCycle,
		codeInvalidName, codeInvalidNames, codeInvalidOrder, codeAmbiguousOrder, codeNotCanonical,
	}
}

func mustRead(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// sameAsSalt compares compiled high data with Salt's rendering decoded with
// UseNumber: a Salt int must be an int64, a Salt float a float64 of the same
// value (a float literal always carries '.', 'e' or "inf"/"nan").
func sameAsSalt(got, want any, path string) error {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok || len(g) != len(w) {
			return fmt.Errorf("%s: got %#v, want %#v", path, got, want)
		}
		for k, wv := range w {
			gv, ok := g[k]
			if !ok {
				return fmt.Errorf("%s: missing key %q", path, k)
			}
			if err := sameAsSalt(gv, wv, path+"."+k); err != nil {
				return err
			}
		}
		return nil
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return fmt.Errorf("%s: got %#v, want %#v", path, got, want)
		}
		for i := range w {
			if err := sameAsSalt(g[i], w[i], fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
		return nil
	case json.Number:
		s := string(w)
		if strings.ContainsAny(s, ".eE") {
			f, err := strconv.ParseFloat(s, 64)
			if g, ok := got.(float64); !ok || err != nil || g != f {
				return fmt.Errorf("%s: got %#v, want float %s", path, got, s)
			}
			return nil
		}
		n, err := strconv.ParseInt(s, 10, 64)
		if g, ok := got.(int64); !ok || err != nil || g != n {
			return fmt.Errorf("%s: got %#v, want int %s", path, got, s)
		}
		return nil
	default: // string, bool, nil
		if got != want {
			return fmt.Errorf("%s: got %#v, want %#v", path, got, want)
		}
		return nil
	}
}
