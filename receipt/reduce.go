package receipt

// valueTrimmed is the marker Salt substitutes for values it trims from an
// oversized return (salt.utils.dicttrim). A trimmed return is not evidence.
const valueTrimmed = "VALUE_TRIMMED"

// Summary is everything that leaves a reduction: no state names, comments,
// changes, output, pillar or credentials.
type Summary struct {
	Status Status
	Passed int
	Total  int
}

// Reduce turns a Salt state return (the "return" of state.apply/state.sls/
// state.high, decoded from JSON or msgpack) into a Summary, by the one reduction
// table shared with the minion module (receipt/testdata/reduce-cases.json holds its
// examples), in this order:
//
//  1. not a mapping (a list of render/compile errors, a string, nil, a
//     number), or an empty mapping -> unknown 0/0;
//  2. the string "VALUE_TRIMMED" as any value anywhere in the return (the
//     return itself, an entry, a field, a nested map value or list element:
//     Salt trimmed the return, so it is not complete evidence) -> unknown 0/0;
//  3. any key that is not a string, any entry that is not a mapping, or any
//     entry without a "result" key -> unknown 0/0;
//  4. every "result" exactly boolean true -> succeeded, passed = total =
//     number of entries;
//  5. otherwise (false, nil, "False", 1, ...) -> failed, passed = number of
//     results exactly true, total = number of entries.
//
// Both map[string]any and map[any]any are accepted at every level, since
// msgpack decoders produce either; other Go map types (map[string]bool, ...)
// are not decoded Salt data and count as "not a mapping". An exception while running the state is
// the caller's to map to unknown; it never reaches Reduce.
func Reduce(ret any) Summary {
	unknown := Summary{Status: StatusUnknown}
	entries, ok := asMapping(ret)
	if !ok || len(entries) == 0 {
		return unknown
	}
	if containsTrimmed(ret) {
		return unknown
	}
	passed := 0
	for _, ent := range entries {
		if !ent.stringKey {
			return unknown
		}
		fields, ok := asMapping(ent.value)
		if !ok {
			return unknown
		}
		var result any
		found := false
		for _, f := range fields {
			if k, ok := f.key.(string); ok && k == "result" {
				result, found = f.value, true
			}
		}
		if !found {
			return unknown
		}
		if b, ok := result.(bool); ok && b {
			passed++
		}
	}
	total := len(entries)
	if passed == total {
		return Summary{Status: StatusSucceeded, Passed: passed, Total: total}
	}
	return Summary{Status: StatusFailed, Passed: passed, Total: total}
}

type mapEntry struct {
	key       any
	stringKey bool
	value     any
}

func asMapping(v any) ([]mapEntry, bool) {
	switch m := v.(type) {
	case map[string]any:
		out := make([]mapEntry, 0, len(m))
		for k, val := range m {
			out = append(out, mapEntry{key: k, stringKey: true, value: val})
		}
		return out, true
	case map[any]any:
		out := make([]mapEntry, 0, len(m))
		for k, val := range m {
			_, isStr := k.(string)
			out = append(out, mapEntry{key: k, stringKey: isStr, value: val})
		}
		return out, true
	}
	return nil, false
}

// containsTrimmed walks v iteratively (no recursion, so any nesting depth is
// safe) looking for the string valueTrimmed as a value.
func containsTrimmed(v any) bool {
	stack := []any{v}
	for len(stack) > 0 {
		x := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		switch t := x.(type) {
		case string:
			if t == valueTrimmed {
				return true
			}
		case map[string]any:
			for _, e := range t {
				stack = append(stack, e)
			}
		case map[any]any:
			for _, e := range t {
				stack = append(stack, e)
			}
		case []any:
			stack = append(stack, t...)
		}
	}
	return false
}
