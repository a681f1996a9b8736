package strictjson

// fastCheck reports whether data, already known to be one valid JSON value in valid UTF-8, certainly
// passes Check: no object holds the same key twice, nesting is at most MaxDepth. It answers false (and the
// caller runs the token walk, which gives the verdict) for anything it does not decide cheaply: a key with
// an escape or a non-ASCII byte (its decoded or case-folded form is the token walk's business), an object
// with more than fastMaxKeys keys, or any duplicate. It allocates nothing for records of ordinary shape
// (the stacks start on the Go stack).
func fastCheck(data []byte, cfg *config) bool {
	type frame struct {
		object  bool
		wantKey bool
		keys    int // index in keys of this object's first key
	}
	var frameBuf [16]frame
	var keyBuf [64][]byte
	stack, keys := frameBuf[:0], keyBuf[:0]
	for i := 0; i < len(data); {
		switch c := data[i]; c {
		case ' ', '\t', '\n', '\r', ':':
			i++
		case ',':
			if n := len(stack); n > 0 && stack[n-1].object {
				stack[n-1].wantKey = true
			}
			i++
		case '{', '[':
			if len(stack) >= MaxDepth {
				return false
			}
			stack = append(stack, frame{object: c == '{', wantKey: c == '{', keys: len(keys)})
			i++
		case '}', ']':
			n := len(stack) - 1
			if n == 0 && stack[0].object && cfg.top != nil {
				for _, k := range keys { // only now: a refused record must not have reported keys
					cfg.top(k)
				}
			}
			keys = keys[:stack[n].keys]
			stack = stack[:n]
			i++
		case '"':
			end := stringEnd(data, i)
			n := len(stack) - 1
			if n >= 0 && stack[n].object && stack[n].wantKey {
				k := data[i+1 : end-1]
				for _, b := range k {
					if b == '\\' || b >= 0x80 {
						return false
					}
				}
				own := keys[stack[n].keys:]
				if len(own) >= fastMaxKeys {
					return false
				}
				for _, prev := range own {
					if sameKey(prev, k, cfg.fold) {
						return false
					}
				}
				keys = append(keys, k)
				stack[n].wantKey = false
			}
			i = end
		default: // number, true, false, null: runs to the next delimiter
			for i < len(data) && !isDelim(data[i]) {
				i++
			}
		}
	}
	return true
}

// fastMaxKeys bounds the pairwise key comparison of fastCheck; larger objects take the token walk's maps.
const fastMaxKeys = 64

func isDelim(b byte) bool {
	switch b {
	case ' ', '\t', '\n', '\r', ',', ':', '{', '}', '[', ']', '"':
		return true
	}
	return false
}

// stringEnd returns the index just past the closing quote of the JSON string whose opening quote is at
// data[i] (len(data) if it is unterminated).
func stringEnd(data []byte, i int) int {
	for j := i + 1; j < len(data); j++ {
		switch data[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return len(data)
}

// sameKey compares two ASCII keys, ignoring letter case with fold (for ASCII, Unicode simple case folding
// is exactly ASCII case folding; non-ASCII keys never reach here).
func sameKey(a, b []byte, fold bool) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		if x != y {
			if !fold || lower(x) != lower(y) {
				return false
			}
		}
	}
	return true
}

func lower(b byte) byte {
	if 'A' <= b && b <= 'Z' {
		return b + 'a' - 'A'
	}
	return b
}
