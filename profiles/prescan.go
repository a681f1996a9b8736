package profiles

import (
	"unicode/utf8"
)

// Limits of a custom state source. They bound memory and time whatever the
// input (see BenchmarkValidateCompileDigest64KiB and FuzzValidateCustom).
const (
	// MaxSourceBytes is the largest accepted source: 64 KiB.
	MaxSourceBytes = 64 << 10
	// maxStateIDs is the largest number of state ids (top-level keys).
	maxStateIDs = 100
	// maxDepth bounds the nesting of collections, counting the top-level
	// mapping as 1: an id's declaration mapping is 2, a function's argument
	// list 3, an argument's mapping 4, so an argument value may itself nest
	// 12 more levels of lists and mappings.
	maxDepth = 16
	// maxItems bounds the length of every list and the number of entries of
	// every mapping other than the top level (which maxStateIDs bounds).
	maxItems = 1000
	// maxScalarBytes bounds every scalar (key or value) after YAML decoding.
	maxScalarBytes = 16 << 10
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

// Bytes prescan must look at (bit c of specialLo for c < 64, bit c-64 of
// specialHi): controls other than tab (line breaks included), the double
// quote, the apostrophe, '#', '%', '[', the backslash, ']', '{', '}' and DEL.
// Every other ASCII byte is skipped.
const (
	specialLo uint64 = 0xffffffff&^(1<<'\t') | 1<<'"' | 1<<'#' | 1<<'%' | 1<<'\''
	specialHi uint64 = 1<<('['-64) | 1<<('\\'-64) | 1<<(']'-64) | 1<<('{'-64) | 1<<('}'-64) | 1<<(0x7f-64)
)

func special(c byte) bool {
	if c < 64 {
		return specialLo>>c&1 != 0
	}
	return specialHi>>(c-64)&1 != 0
}

// prescan enforces the refusals that apply to the raw text, before any YAML
// parsing: UTF-8, characters whose meaning differs between YAML 1.1 (PyYAML,
// libyaml) and 1.2 or that PyYAML refuses, template syntax, renderer
// directives, YAML directives, and runaway flow nesting. It skips plain ASCII
// bytes and computes a position only for the error it returns.
func prescan(src []byte) *CustomError {
	var fg flowGuard
	for i := 0; i < len(src); {
		c := src[i]
		if c < utf8.RuneSelf {
			if !special(c) {
				i++
				continue
			}
			if err := prescanASCII(src, i); err != nil {
				return err
			}
			if fg.step(src, i) {
				return errorAt(src, i, codeTooDeep, "lists and mappings nest deeper than 16 levels")
			}
			i++
			continue
		}
		r, w := utf8.DecodeRune(src[i:])
		if r == utf8.RuneError && w == 1 {
			return errorAt(src, i, codeInvalidUTF8, "source is not valid UTF-8")
		}
		if !allowedRune(r) {
			return errorAt(src, i, codeInvalidCharacter,
				"this character is not allowed (C1 control, NEL, line or paragraph separator, non-character, or a byte order mark after the start)")
		}
		i += w
	}
	return nil
}

// prescanASCII checks one special ASCII byte.
func prescanASCII(src []byte, i int) *CustomError {
	c := src[i]
	next := byte(0)
	if i+1 < len(src) {
		next = src[i+1]
	}
	switch {
	case c == '\n' || c == '\r':
	case c < 0x20 || c == 0x7f:
		return errorAt(src, i, codeInvalidCharacter,
			"control characters are not allowed; use an escape sequence inside double quotes")
	case c == '{' && (next == '{' || next == '%' || next == '#'):
		return errorAt(src, i, codeTemplateSyntax,
			"template syntax ({{, {% or {#) is not allowed anywhere, comments included: no renderer runs")
	case c == '#' && next == '!' && blanksBefore(src, i):
		return errorAt(src, i, codeRendererDirective, "renderer directives (#!) are not allowed")
	case c == '%' && (i == 0 || src[i-1] == '\n' || src[i-1] == '\r'):
		return errorAt(src, i, codeYAMLDirective, "YAML directives (%YAML, %TAG) are not allowed")
	}
	return nil
}

// blanksBefore reports whether only spaces and tabs precede src[i] on its line.
func blanksBefore(src []byte, i int) bool {
	for j := i - 1; j >= 0; j-- {
		switch src[j] {
		case ' ', '\t':
		case '\n', '\r':
			return true
		default:
			return false
		}
	}
	return true
}

func errorAt(src []byte, off int, code errorCode, msg string) *CustomError {
	line, col := positionOf(src, off)
	return newError(code, line, col, msg)
}

// positionOf returns the 1-based line and character column of a byte offset,
// counting "\n", "\r\n" and a lone "\r" as line breaks, as libyaml does.
func positionOf(src []byte, off int) (line, col int) {
	line, col = 1, 1
	for i := 0; i < off && i < len(src); {
		switch c := src[i]; {
		case c == '\n' || c == '\r':
			if c == '\r' && i+1 < len(src) && src[i+1] == '\n' {
				i++
			}
			line, col = line+1, 1
			i++
		case c < utf8.RuneSelf:
			i++
			col++
		default:
			_, w := utf8.DecodeRune(src[i:])
			i += w
			col++
		}
	}
	return line, col
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
// 10,000 levels), while maxDepth refuses anything beyond 16 anyway.
const maxFlowGuard = 256

// flowGuard approximates the flow-collection nesting of the raw text: '[' and
// '{' opening a token (see tokenStart) outside quotes and comments. It can
// only over-count in block scalar text, which would take 256 unbalanced
// brackets each preceded by a blank.
type flowGuard struct {
	depth   int
	quote   byte // '"' or '\'' inside a quoted scalar
	esc     int  // offset of a byte the quote state ignores (after \\, or the second ' of '')
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

// step looks at the special byte src[i] (prescan skips the others) and
// reports whether the nesting went beyond the guard.
func (g *flowGuard) step(src []byte, i int) bool {
	c := src[i]
	if i == g.esc && i > 0 {
		return false // escaped in a double-quoted scalar, or the second ' of ''
	}
	switch {
	case g.comment:
		g.comment = c != '\n' && c != '\r'
	case g.quote == '"':
		if c == '\\' {
			g.esc = i + 1
		} else if c == '"' {
			g.quote = 0
		}
	case g.quote == '\'':
		if c == '\'' {
			if i+1 < len(src) && src[i+1] == '\'' {
				g.esc = i + 1
			} else {
				g.quote = 0
			}
		}
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
