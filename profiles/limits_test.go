package profiles

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// pathologicalBudget is the time one 64 KiB input may take, generous enough
// for -race on a loaded machine; typical runs take well under 10 ms.
const pathologicalBudget = 500 * time.Millisecond

func pad64KiB(prefix, unit string) string {
	var b strings.Builder
	b.WriteString(prefix)
	for b.Len()+len(unit) <= MaxSourceBytes {
		b.WriteString(unit)
	}
	return b.String()
}

func TestSizeLimit(t *testing.T) {
	ok := "a: test.nop\n"
	exact := ok + "#" + strings.Repeat("x", MaxSourceBytes-len(ok)-2) + "\n"
	if len(exact) != MaxSourceBytes {
		t.Fatalf("len %d", len(exact))
	}
	if err := ValidateCustom([]byte(exact)); err != nil {
		t.Fatalf("exactly 64 KiB: %v", err)
	}
	wantCode(t, exact+"\n", codeTooLarge)
	wantCode(t, strings.Repeat("a", 10<<20), codeTooLarge)
}

func TestPathologicalInputs(t *testing.T) {
	deepBlock := func() string {
		var b strings.Builder
		for i := 0; b.Len() < MaxSourceBytes-400; i++ {
			fmt.Fprintf(&b, "%sk:\n", strings.Repeat(" ", i))
		}
		return b.String()
	}
	cases := []struct {
		name string
		src  string
		code errorCode
	}{
		{"billion_laughs", "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + func() string {
			var b strings.Builder
			for i := 'b'; i <= 'j'; i++ {
				fmt.Fprintf(&b, "%c: &%c [*%c, *%c, *%c, *%c, *%c, *%c, *%c, *%c, *%c, *%c]\n", i, i,
					i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1)
			}
			return b.String()
		}(), codeAnchor},
		{"deep_flow_64KiB", "a: " + strings.Repeat("[", MaxSourceBytes-4), codeTooDeep},
		{"deep_flow_closed", "a: " + strings.Repeat("[", 9000) + strings.Repeat("]", 9000) + "\n", codeTooDeep},
		{"deep_flow_spaced_quotes", "a: " + strings.Repeat("[ '[', \"]\", # ]\n", 2000) + "\n", codeTooDeep},
		{"flow_255_closed", "a: " + strings.Repeat("[", 255) + strings.Repeat("]", 255) + "\n", codeTooDeep},
		{"deep_block_sequences", "a:\n  test.nop:\n    - v:\n" + func() string {
			var b strings.Builder
			for i := 0; i < 300; i++ {
				fmt.Fprintf(&b, "%s-\n", strings.Repeat(" ", 8+i))
			}
			return b.String()
		}(), codeTooDeep},
		{"deep_flow_mappings", "a: " + strings.Repeat("{b: ", 5000) + "x" + strings.Repeat("}", 5000) + "\n", codeTooDeep},
		{"deep_block", deepBlock(), codeTooDeep},
		{"deep_sequence_dashes", "a:\n  test.nop:\n    - v: " + strings.Repeat("- ", 2000) + "x\n", codeSyntax},
		{"64KiB_of_ids", pad64KiB("", fmt.Sprintf("k%05d: test.nop\n", 1)), codeDuplicateKey},
		{"64KiB_of_distinct_ids", func() string {
			var b strings.Builder
			for i := 0; b.Len() < MaxSourceBytes-20; i++ {
				fmt.Fprintf(&b, "k%05d: test.nop\n", i)
			}
			return b.String()
		}(), codeTooManyIDs},
		{"64KiB_of_arguments", func() string {
			var b strings.Builder
			b.WriteString("a:\n  test.nop:\n")
			for i := 0; b.Len() < MaxSourceBytes-20; i++ {
				fmt.Fprintf(&b, "    - a%05d: 1\n", i)
			}
			return b.String()
		}(), codeTooManyItems},
		{"64KiB_of_nested_keys", func() string {
			var b strings.Builder
			b.WriteString("a:\n  test.nop:\n    - v:\n")
			for i := 0; b.Len() < MaxSourceBytes-20; i++ {
				fmt.Fprintf(&b, "        k%05d: 1\n", i)
			}
			return b.String()
		}(), codeTooManyItems},
		{"64KiB_flow_list", pad64KiB("a:\n  test.nop:\n    - v: [1", ",1")[:MaxSourceBytes-2] + "]\n", codeTooManyItems},
		{"64KiB_line_scalar", "a:\n  test.nop:\n    - v: " + strings.Repeat("x", MaxSourceBytes-30) + "\n", codeScalarTooLong},
		{"64KiB_line_quoted", "a:\n  test.nop:\n    - v: '" + strings.Repeat("x", MaxSourceBytes-30) + "'\n", codeScalarTooLong},
		{"long_key", "a:\n  test.nop:\n    - " + strings.Repeat("k", 5000) + ": 1\n", codeSyntax},
		{"64KiB_non_ascii", "a:\n  test.nop:\n    - v: \"" + strings.Repeat("é", 8000) + "\"\n    - w: " +
			strings.Repeat("ü", 8000) + "\n", ""},
		{"many_tags", "a:\n  test.nop:\n    - v: [" + strings.Repeat("!!str x, ", 900) + "]\n", codeExplicitTag},
		{"many_aliases", "a: &x y\nb: [" + strings.Repeat("*x, ", 15000) + "]\n", codeAnchor},
		{"template_at_end", pad64KiB("", "#.\n")[:MaxSourceBytes-2] + "{{", codeTemplateSyntax},
		{"64KiB_blank_lines", pad64KiB("", "\n"), codeEmptyDocument},
		{"64KiB_of_documents", pad64KiB("", "---\n"), codeMultipleDocuments},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if len(tc.src) > MaxSourceBytes {
				t.Fatalf("source is %d bytes", len(tc.src))
			}
			start := time.Now()
			err := ValidateCustom([]byte(tc.src))
			if d := time.Since(start); d > pathologicalBudget*raceSlowdown {
				t.Errorf("took %v", d)
			}
			if tc.code == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var ce *CustomError
			if !errors.As(err, &ce) || ce.Code != tc.code {
				t.Fatalf("got %v, want %s", err, tc.code)
			}
		})
	}
}

// TestErrorsNeverEchoSource plants a canary where each rule fires and in the
// surrounding text: no error message may contain it.
func TestErrorsNeverEchoSource(t *testing.T) {
	const s = "hunter2S3CR3T"
	for _, src := range []string{
		"a:\n  test.nop:\n    - password: " + s + "\n    - v: yes\n",
		"a:\n  test.nop:\n    - password: &" + s + " x\n",
		"a:\n  test.nop:\n    - password: *" + s + "\n",
		"a:\n  test.nop:\n    - password: !" + s + " x\n",
		"a:\n  test.nop:\n    - password: !!" + s + " x\n",
		"a:\n  test.nop:\n    - password: {{ " + s + " }}\n",
		"#!" + s + "\na: test.nop\n",
		"%TAG !" + s + "! tag:x,2000:\n---\na: test.nop\n",
		"a:\n  test.nop:\n    - password: \"" + s + "\n",
		"a:\n  test.nop:\n    - password: '" + s + "\n",
		"a:\n  test.nop:\n    - password: \"\\q" + s + "\"\n",
		"a:\n  test.nop:\n    - " + s + ": 1\n    - " + s + ": 2\n",
		s + ":\n  test.nop: []\n" + s + ":\n  test.nop: []\n",
		"a:\n  " + s + ".x.y: []\n",
		"a:\n  " + s + ": []\n",
		"a: " + s + "\n",
		s + "\n",
		"- " + s + "\n",
		"a:\n  test.nop:\n    - name: [" + s + "]\n",
		"a:\n  test.nop:\n    - require: " + s + "\n",
		"a:\n  test.nop:\n    - order: " + s + "\n",
		"a:\n  test.nop:\n    - names: " + s + "\n",
		"a:\n  test.nop:\n    - x-" + s + ": 1\n",
		"a:\n\t" + s + "\n",
		"a: [" + s + "\n",
		"a: {" + s + ": [}\n",
		"? " + s + "\n: [\n",
		"a:\n  test.nop:\n    - password: " + s + "\u2028\n",
		"a:\n  test.nop:\n    - password: " + s + "\xff\n",
		"a:\n  test.nop: []\n---\n" + s + ": 1\n",
	} {
		err := ValidateCustom([]byte(src))
		if err == nil {
			t.Errorf("accepted %q", src)
			continue
		}
		if strings.Contains(err.Error(), s) || strings.Contains(fmt.Sprintf("%+v", err), s) {
			t.Errorf("error echoes the source: %v", err)
		}
	}
}

func wantCode(t *testing.T, src string, code errorCode) {
	t.Helper()
	err := ValidateCustom([]byte(src))
	var ce *CustomError
	if !errors.As(err, &ce) || ce.Code != code {
		t.Fatalf("got %v, want %s", err, code)
	}
}
