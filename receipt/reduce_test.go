package receipt

import (
	"testing"

	"github.com/vmihailenco/msgpack/v5"
)

func TestReduceGoShapes(t *testing.T) {
	t.Parallel()
	ok := map[string]any{"result": true}
	cases := []struct {
		name string
		in   any
		want Summary
	}{
		{"map any any", map[any]any{"a": map[any]any{"result": true}, "b": map[any]any{"result": false}}, Summary{StatusFailed, 1, 2}},
		{"mixed map kinds", map[string]any{"a": map[any]any{"result": true}, "b": ok}, Summary{StatusSucceeded, 2, 2}},
		{"non-string state key", map[any]any{int64(1): ok}, Summary{Status: StatusUnknown}},
		{"non-string field key only", map[any]any{"a": map[any]any{int64(1): true}}, Summary{Status: StatusUnknown}},
		{"typed map is not a mapping", map[string]map[string]any{"a": ok}, Summary{Status: StatusUnknown}},
		{"typed entry map is not a mapping", map[string]any{"a": map[string]bool{"result": true}}, Summary{Status: StatusUnknown}},
		{"int result", map[string]any{"a": map[string]any{"result": int64(1)}}, Summary{StatusFailed, 0, 1}},
		{"bytes return", []byte("x"), Summary{Status: StatusUnknown}},
		{"nil map", map[string]any(nil), Summary{Status: StatusUnknown}},
		{"trimmed bytes are not the marker", map[string]any{"a": map[string]any{"result": true, "c": []byte(valueTrimmed)}}, Summary{StatusSucceeded, 1, 1}},
	}
	for _, c := range cases {
		if got := Reduce(c.in); got != c.want {
			t.Errorf("%s: Reduce = %+v, want %+v", c.name, got, c.want)
		}
	}
}

func TestReduceDeepNestingNoRecursion(t *testing.T) {
	t.Parallel()
	var deep any = "leaf"
	for i := 0; i < 200000; i++ {
		deep = []any{deep}
	}
	in := map[string]any{"a": map[string]any{"result": true, "changes": deep}}
	if got := Reduce(in); got != (Summary{StatusSucceeded, 1, 1}) {
		t.Fatalf("Reduce = %+v", got)
	}
}

func TestReduceMsgpackDecoded(t *testing.T) {
	t.Parallel()
	ret := map[string]any{
		"test_|-a_|-a_|-succeed_without_changes": map[string]any{"result": true, "changes": map[string]any{}, "duration": 1.5},
		"test_|-b_|-b_|-fail_without_changes":    map[string]any{"result": false, "__run_num__": 1},
	}
	b, err := msgpack.Marshal(ret)
	if err != nil {
		t.Fatal(err)
	}
	var v any
	if err := msgpack.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	if got := Reduce(v); got != (Summary{StatusFailed, 1, 2}) {
		t.Fatalf("Reduce = %+v", got)
	}
}
