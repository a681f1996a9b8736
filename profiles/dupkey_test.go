package profiles

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// keySet switches from a linear scan to a map after 16 keys; a duplicate must be found on both sides of
// that switch, at the top level (state ids) and in a nested argument mapping.
func TestDuplicateKeyInLargeMappings(t *testing.T) {
	ids := func(n int) string {
		var b strings.Builder
		for i := 0; i < n; i++ {
			fmt.Fprintf(&b, "id%02d:\n  test.nop: []\n", i)
		}
		return b.String()
	}
	nested := func(n int) string {
		var b strings.Builder
		b.WriteString("a:\n  test.nop:\n    - v:\n")
		for i := 0; i < n; i++ {
			fmt.Fprintf(&b, "        k%02d: 1\n", i)
		}
		return b.String()
	}
	for _, n := range []int{1, 15, 16, 17, 40} {
		if err := ValidateCustom([]byte(ids(n))); err != nil {
			t.Fatalf("%d distinct ids refused: %v", n, err)
		}
		if err := ValidateCustom([]byte(nested(n))); err != nil {
			t.Fatalf("%d distinct nested keys refused: %v", n, err)
		}
		for _, dup := range []int{0, n - 1} {
			srcs := map[string]string{
				"top":    ids(n) + fmt.Sprintf("id%02d:\n  test.nop: []\n", dup),
				"nested": nested(n) + fmt.Sprintf("        k%02d: 2\n", dup),
			}
			for where, src := range srcs {
				var ce *CustomError
				err := ValidateCustom([]byte(src))
				if !errors.As(err, &ce) || ce.Code != codeDuplicateKey {
					t.Fatalf("%s: %d keys, duplicate of #%d: got %v, want %s", where, n, dup, err, codeDuplicateKey)
				}
				if want := n + 1 + map[string]int{"top": n, "nested": 3}[where]; ce.Line != want {
					t.Fatalf("%s: %d keys: duplicate reported at line %d, want %d", where, n, ce.Line, want)
				}
			}
		}
	}
}
