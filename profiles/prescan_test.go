package profiles

import (
	"errors"
	"strings"
	"sync"
	"testing"
)

func TestPositions(t *testing.T) {
	for _, tc := range []struct {
		src       string
		code      errorCode
		line, col int
	}{
		{"\ufeffa:\n  test.nop:\n    - v: yes\n", codeAmbiguousScalar, 3, 10},
		{"a:\r  test.nop:\r    - v: yes\r", codeAmbiguousScalar, 3, 10},
		{"a:\r\n  test.nop:\r\n    - v: yes\r\n", codeAmbiguousScalar, 3, 10},
		{"a:\n  test.nop:\n    - v: {ü: [é, ! 5]}\n", codeExplicitTag, 3, 18},
		{"a:\n  test.nop:\n    - v: {ü: [é, !!str 5]}\n", codeExplicitTag, 3, 18},
		{"a:\n  test.nop:\n    - v: \"é\"\n    - w: é{{x}}\n", codeTemplateSyntax, 4, 11},
		{"é: b\n\u2028", codeInvalidCharacter, 2, 1},
		{"ab: c\n  #! x\n", codeRendererDirective, 2, 3},
		{"a: b #! not a directive\nc: d\n", codeInvalidState, 1, 4},
	} {
		err := ValidateCustom([]byte(tc.src))
		var ce *CustomError
		if !errors.As(err, &ce) || ce.Code != tc.code || ce.Line != tc.line || ce.Column != tc.col {
			t.Errorf("%q: got %v, want %s at %d:%d", tc.src, err, tc.code, tc.line, tc.col)
		}
	}
}

func TestFlowGuardIgnoresQuotesCommentsAndWords(t *testing.T) {
	deep := strings.Repeat("[", 300)
	for _, src := range []string{
		"a:\n  test.nop:\n    - v: \"" + deep + "\"\n",
		"a:\n  test.nop:\n    - v: '" + deep + "'\n",
		"a:\n  test.nop:\n    - v: 'it''s " + deep + "'\n",
		"a:\n  test.nop:\n    - v: \"\\\"" + deep + "\"\n",
		"# " + deep + "\na:\n  test.nop: []\n",
		"a:\n  test.nop:\n    - v: x" + strings.Repeat("[", 300) + "\n",
		"a:\n  cmd.run:\n    - name: |\n        echo a" + strings.Repeat("[a", 300) + "\n",
	} {
		if err := ValidateCustom([]byte(src)); err != nil {
			t.Errorf("%.60q: %v", src, err)
		}
	}
	wantCode(t, "a:\n  test.nop:\n    - v: "+strings.Repeat("[ ", 300)+"\n", codeTooDeep)
}

func TestIdentifiers(t *testing.T) {
	for s, ok := range map[string]bool{
		"pkg.installed": true, "ssh_known_hosts.present": true, "Mod.Fun2": true,
		"pkg": false, "pkg.": false, ".installed": false, "a.b.c": false, "_x.y": false,
		"x._y": false, "1x.y": false, "x.1y": false, "pk g.x": false, "pkg.inst-alled": false, "é.x": false,
	} {
		if _, _, got := splitFunction(s); got != ok {
			t.Errorf("splitFunction(%q) = %v", s, got)
		}
	}
	for s, ok := range map[string]bool{"name": true, "_x": true, "a1_b": true, "": false, "1a": false, "a-b": false, "a.b": false} {
		if isIdent(s) != ok {
			t.Errorf("isIdent(%q) = %v", s, !ok)
		}
	}
}

func TestConcurrentCompile(t *testing.T) {
	src := mustRead(t, "testdata/custom/accept/requisites_all.yaml")
	want, err := CompileCustom(src)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 20 {
				c, err := CompileCustom(src)
				if err != nil || c.Digest != want.Digest {
					t.Error("concurrent compile differs")
					return
				}
			}
		})
	}
	wg.Wait()
}

func TestSpecialBytes(t *testing.T) {
	for c := 0; c < 128; c++ {
		want := c < 0x20 && c != '\t' || strings.IndexByte("\"#%'[\\]{}\x7f", byte(c)) >= 0
		if special(byte(c)) != want {
			t.Errorf("special(%#x) = %v", c, !want)
		}
	}
}
