package salttest

// Plain converts values built by this package (ordered maps from StateReturn, decoded loads)
// into ordinary Go values: map[string]any, []any, strings, int64, float64, bool, nil.
func Plain(v any) any { return plain(v) }
