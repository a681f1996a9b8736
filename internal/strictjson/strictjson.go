// Package strictjson checks that a stored JSON record is exactly one value with no duplicate keys, before
// encoding/json decodes it.
//
// encoding/json keeps the last of two equal keys and, decoding into a struct, also merges keys that differ
// only in case ("status" and "Status" fill one field). A record with an appended `,"status":"failed"` or a
// second object after the first would therefore decode as something its writer never wrote. Check walks
// the tokens once, keeps the keys of every open object, and refuses a repeated key at any depth, anything
// but whitespace after the value, invalid UTF-8 and nesting deeper than MaxDepth. Errors carry byte
// offsets only, never key or value text: records may hold untrusted or secret strings.
package strictjson

import (
	"bytes"
	"encoding/json"
	"io"
	"unicode"
	"unicode/utf8"

	"github.com/cockroachdb/errors"

	"github.com/oduflow/oduflow-go/internal/errmark"
)

// MaxDepth bounds the nesting of arrays and objects (encoding/json itself allows 10000).
const MaxDepth = 256

// Sentinel errors; every error of Check is ErrInvalid and one of the others.
var (
	// ErrInvalid matches every refusal of Check.
	ErrInvalid = errors.New("strictjson: not a strict JSON record")
	// ErrSyntax: not JSON, empty, or not valid UTF-8.
	ErrSyntax = errors.New("strictjson: syntax error")
	// ErrDuplicateKey: an object holds the same key twice (with FoldCase: two keys equal under Unicode
	// simple case folding, which encoding/json merges into one struct field).
	ErrDuplicateKey = errors.New("strictjson: duplicate key")
	// ErrTrailingData: something other than whitespace follows the value.
	ErrTrailingData = errors.New("strictjson: trailing data")
	// ErrTooDeep: arrays and objects nested deeper than MaxDepth.
	ErrTooDeep = errors.New("strictjson: nested too deeply")
)

// Option configures Check.
type Option func(*config)

type config struct {
	fold bool
	top  func(key []byte) // TopLevelKeys
}

// FoldCase makes keys that differ only in letter case duplicates. Use it for records decoded into Go
// structs, where encoding/json matches field names case-insensitively.
func FoldCase() Option { return func(c *config) { c.fold = true } }

type frame struct {
	object  bool
	wantKey bool // in an object: the next token is a key
	keys    map[string]struct{}
}

// TopLevelKeys makes a successful Check call fn with each key of a top-level object, in order, as the raw
// bytes between its quotes. fn may be called before Check finds a refusal later in the record; use what it
// saw only when Check returns nil. Keys written with escapes or non-ASCII bytes are passed raw (escapes
// undecoded), so a caller matching names byte for byte treats them as unknown.
func TopLevelKeys(fn func(key []byte)) Option { return func(c *config) { c.top = fn } }

// Check returns nil when data is exactly one JSON value, optionally surrounded by whitespace, without
// duplicate keys at any depth.
//
// A record that is valid JSON (json.Valid, which allocates nothing) and whose keys are all plain ASCII is
// checked by one pass over the bytes without allocating (fastCheck). Anything else, including every
// record fastCheck would refuse, goes through the token walk (slowCheck), whose answer is the answer: the
// fast pass only ever saves work, it decides nothing on its own.
func Check(data []byte, opts ...Option) error {
	var cfg config
	for _, o := range opts {
		o(&cfg)
	}
	if utf8.Valid(data) && json.Valid(data) && fastCheck(data, &cfg) {
		return nil
	}
	return slowCheck(data, &cfg)
}

// slowCheck is the token walk over encoding/json's Decoder; it returns the precise refusal.
func slowCheck(data []byte, cfg *config) error {
	if !utf8.Valid(data) {
		return fail(ErrSyntax, "invalid UTF-8", 0)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber() // numbers stay text: no float conversion can fail or lose anything here
	var stack []frame
	started := false
	for {
		off := dec.InputOffset()
		tok, err := dec.Token()
		if err == io.EOF && !started {
			return fail(ErrSyntax, "empty input", off)
		}
		if err != nil {
			return fail(ErrSyntax, "malformed JSON", off)
		}
		started = true
		top := len(stack) - 1
		if top >= 0 && stack[top].object && stack[top].wantKey {
			if d, ok := tok.(json.Delim); ok && d == '}' {
				stack = stack[:top]
			} else {
				k := tok.(string) // the decoder guarantees a string in key position
				if top == 0 && cfg.top != nil {
					cfg.top(rawKey(data, off))
				}
				if cfg.fold {
					k = fold(k)
				}
				if _, dup := stack[top].keys[k]; dup {
					return fail(ErrDuplicateKey, "duplicate key", off)
				}
				stack[top].keys[k] = struct{}{}
				stack[top].wantKey = false
				continue
			}
		} else if d, ok := tok.(json.Delim); ok {
			switch d {
			case '{', '[':
				if len(stack) >= MaxDepth {
					return fail(ErrTooDeep, "too deep", off)
				}
				stack = append(stack, frame{object: d == '{', wantKey: d == '{', keys: keysFor(d)})
				continue
			default: // '}' or ']' closing the innermost frame
				stack = stack[:top]
			}
		}
		// A value (scalar or a just-closed container) completed: its parent wants a key next.
		if n := len(stack); n > 0 {
			if stack[n-1].object {
				stack[n-1].wantKey = true
			}
			continue
		}
		break
	}
	off := dec.InputOffset()
	if _, err := dec.Token(); err != io.EOF {
		return fail(ErrTrailingData, "data after the value", off)
	}
	return nil
}

func keysFor(d json.Delim) map[string]struct{} {
	if d == '{' {
		return make(map[string]struct{})
	}
	return nil
}

// fold maps every rune to the smallest rune of its simple case-folding orbit, so fold(a) == fold(b)
// exactly when strings.EqualFold(a, b).
func fold(s string) string {
	var b []byte
	for i, r := range s {
		m := r
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			if f < m {
				m = f
			}
		}
		if m != r && b == nil {
			b = append(make([]byte, 0, len(s)), s[:i]...)
		}
		if b != nil {
			b = utf8.AppendRune(b, m)
		}
	}
	if b == nil {
		return s
	}
	return string(b)
}

func fail(kind error, what string, offset int64) error {
	return errmark.Mark(errors.Newf("strictjson: %s at byte %d", errors.Safe(what), errors.Safe(offset)), kind, ErrInvalid)
}

// rawKey returns the bytes between the quotes of the key starting at or after off (whitespace and a ','
// may precede it).
func rawKey(data []byte, off int64) []byte {
	i := int(off)
	for i < len(data) && data[i] != '"' {
		i++
	}
	if i >= len(data) {
		return nil
	}
	end := stringEnd(data, i)
	return data[i+1 : end-1]
}
