package profiles

import (
	"unicode/utf8"
)

// Limits of a custom state source. They bound memory and time whatever the
// input (see BenchmarkValidateCompileDigest64KiB and FuzzValidateCustom).
const (
	// MaxSourceBytes is the largest accepted source: 64 KiB.
	MaxSourceBytes = 64 << 10
	// MaxStateIDs is the largest number of state ids (top-level keys).
	MaxStateIDs = 100
	// MaxDepth bounds the nesting of collections, counting the top-level
	// mapping as 1: an id's declaration mapping is 2, a function's argument
	// list 3, an argument's mapping 4, so an argument value may itself nest
	// 12 more levels of lists and mappings.
	MaxDepth = 16
	// MaxItems bounds the length of every list and the number of entries of
	// every mapping other than the top level (which MaxStateIDs bounds).
	MaxItems = 1000
	// MaxScalarBytes bounds every scalar (key or value) after YAML decoding.
	MaxScalarBytes = 16 << 10
)

// lineIndex maps the 1-based line and character column that the YAML parser
// reports to byte offsets in the source. Lines end at "\n", "\r\n" or a lone
// "\r", as in libyaml (NEL, U+2028 and U+2029 are refused before parsing).
type lineIndex struct {
	src    []byte
	starts []int  // byte offset of each line start
	ascii  []bool // whether the line holds only ASCII (column == byte offset)
}

func newLineIndex(src []byte) *lineIndex {
	li := &lineIndex{src: src, starts: []int{0}}
	ascii := true
	for i := 0; i < len(src); i++ {
		c := src[i]
		if c >= utf8.RuneSelf {
			ascii = false
		}
		if c == '\n' || c == '\r' {
			if c == '\r' && i+1 < len(src) && src[i+1] == '\n' {
				i++
			}
			li.ascii = append(li.ascii, ascii)
			li.starts = append(li.starts, i+1)
			ascii = true
		}
	}
	li.ascii = append(li.ascii, ascii)
	return li
}

// byteAt returns the source byte at the 1-based line and character column, or
// 0 when the position lies outside the source.
func (li *lineIndex) byteAt(line, col int) byte {
	if line < 1 || line > len(li.starts) || col < 1 {
		return 0
	}
	off := li.starts[line-1]
	if li.ascii[line-1] {
		off += col - 1
	} else {
		for n := 1; n < col && off < len(li.src); n++ {
			_, w := utf8.DecodeRune(li.src[off:])
			off += w
		}
	}
	if off >= len(li.src) {
		return 0
	}
	return li.src[off]
}

// prescan enforces the limits and refusals that apply to the raw text, before
// any YAML parsing: size, UTF-8, characters whose meaning differs between YAML
// 1.1 (PyYAML, libyaml) and 1.2 or that PyYAML refuses, template syntax,
// renderer directives and YAML directives. It reads each byte once.
func prescan(src []byte) *CustomError {
	line, col := 1, 1
	lineStart := true // only blanks seen so far on this line
	var fg flowGuard
	for i := 0; i < len(src); {
		c := src[i]
		if fg.step(src, i) {
			return newError(CodeTooDeep, line, col, "lists and mappings nest deeper than 16 levels")
		}
		if c < utf8.RuneSelf {
			switch {
			case c == '\n' || c == '\r':
				if c == '\r' && i+1 < len(src) && src[i+1] == '\n' {
					i++
				}
				i++
				line, col, lineStart = line+1, 1, true
				continue
			case c == '\t' || c == ' ':
			case c < 0x20 || c == 0x7f:
				return newError(CodeInvalidCharacter, line, col,
					"control characters are not allowed; use an escape sequence inside double quotes")
			case c == '{' && i+1 < len(src) && (src[i+1] == '{' || src[i+1] == '%' || src[i+1] == '#'):
				return newError(CodeTemplateSyntax, line, col,
					"template syntax ({{, {% or {#) is not allowed anywhere, comments included: no renderer runs")
			case c == '#' && lineStart && i+1 < len(src) && src[i+1] == '!':
				return newError(CodeRendererDirective, line, col, "renderer directives (#!) are not allowed")
			case c == '%' && col == 1:
				return newError(CodeYAMLDirective, line, col, "YAML directives (%YAML, %TAG) are not allowed")
			}
			if c != '\t' && c != ' ' {
				lineStart = false
			}
			i++
			col++
			continue
		}
		r, w := utf8.DecodeRune(src[i:])
		if r == utf8.RuneError && w == 1 {
			return newError(CodeInvalidUTF8, line, col, "source is not valid UTF-8")
		}
		if !allowedRune(r) {
			return newError(CodeInvalidCharacter, line, col,
				"this character is not allowed (C1 control, NEL, line or paragraph separator, non-character, or a byte order mark after the start)")
		}
		lineStart = false
		i += w
		col++
	}
	return nil
}

// allowedRune reports whether a non-ASCII rune may appear in a source. NEL
// (U+0085), U+2028 and U+2029 are line breaks in YAML 1.1 (PyYAML, libyaml)
// but not in YAML 1.2; C1 controls and U+FFFE/U+FFFF are refused by PyYAML; a
// byte order mark is accepted only as the very first character, which the
// caller strips before prescan.
func allowedRune(r rune) bool {
	switch {
	case r >= 0x80 && r <= 0x9f:
		return false
	case r == 0x2028 || r == 0x2029:
		return false
	case r == 0xfeff || r == 0xfffe || r == 0xffff:
		return false
	}
	return true
}

// maxFlowGuard is the flow nesting at which prescan gives up before the YAML
// parser sees the source: yaml.v3's scanner slows down with nesting (it allows
// 10,000 levels), while MaxDepth refuses anything beyond 16 anyway.
const maxFlowGuard = 256

// flowGuard approximates the flow-collection nesting of the raw text: '[' and
// '{' opening a token (see tokenStart) outside quotes and comments. It can
// only over-count in block scalar text, which would take 256 unbalanced
// brackets each preceded by a blank.
type flowGuard struct {
	depth   int
	quote   byte // '"' or '\'' inside a quoted scalar; 'e' after a backslash, 'd' inside ''
	comment bool
}

// tokenStart reports whether src[i] may start a token: at the start, after
// a blank or a line break, and inside a flow collection also right after
// '[', '{' or ','.
func (g *flowGuard) tokenStart(src []byte, i int) bool {
	if i == 0 {
		return true
	}
	switch src[i-1] {
	case ' ', '\t', '\n', '\r':
		return true
	case '[', '{', ',':
		return g.depth > 0
	}
	return false
}

// step looks at src[i] and reports whether the nesting went beyond the guard.
func (g *flowGuard) step(src []byte, i int) bool {
	c := src[i]
	switch {
	case g.comment:
		g.comment = c != '\n' && c != '\r'
	case g.quote == '"':
		if c == '\\' {
			// the escaped character cannot end the scalar
			g.quote = 'e'
		} else if c == '"' {
			g.quote = 0
		}
	case g.quote == 'e':
		g.quote = '"'
	case g.quote == '\'':
		if c == '\'' {
			g.quote = 0 // a doubled '' re-opens at the next byte
			if i+1 < len(src) && src[i+1] == '\'' {
				g.quote = 'd'
			}
		}
	case g.quote == 'd':
		g.quote = '\''
	case c == '#' && g.tokenStart(src, i):
		g.comment = true
	case (c == '"' || c == '\'') && g.tokenStart(src, i):
		g.quote = c
	case (c == '[' || c == '{') && g.tokenStart(src, i):
		g.depth++
		return g.depth > maxFlowGuard
	case (c == ']' || c == '}') && g.depth > 0:
		g.depth--
	}
	return false
}
