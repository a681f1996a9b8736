package profiles

import (
	"bytes"
	"io"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/oduflow/oduflow-go/internal/errmark"
	"github.com/oduflow/oduflow-go/receipt"
)

// Compiled is a validated custom state source compiled to Salt high data.
// Canonical is the RFC 8785 canonical JSON of HighData (receipt.CanonicalJSON)
// and Digest its lowercase hex SHA-256 (receipt.Digest): the payload the
// minion module receives and the digest it verifies before calling
// state.high.
type Compiled struct {
	HighData  map[string]any
	Canonical []byte
	Digest    string
}

// ValidateCustom reports whether source is an acceptable custom state. It
// returns nil or a *CustomError (matching ErrInvalidCustom). It accepts
// exactly what CompileCustom accepts: it runs the same code. Nothing is
// executed, rendered or resolved.
func ValidateCustom(source []byte) (err error) {
	defer errmark.Boundary(&err)
	if _, err := CompileCustom(source); err != nil {
		return err
	}
	return nil
}

// CompileCustom validates source and compiles it to Salt high data, its
// canonical JSON and digest. On refusal it returns a *CustomError (matching
// ErrInvalidCustom) whose message never contains source text.
func CompileCustom(source []byte) (_ *Compiled, err error) {
	defer errmark.Boundary(&err)
	high, cerr := compileHigh(source)
	if cerr != nil {
		return nil, cerr
	}
	canonical, err := receipt.CanonicalJSON(high)
	if err != nil {
		return nil, newError(codeNotCanonical, 0, 0, "the compiled high data has no canonical JSON form")
	}
	return &Compiled{HighData: high, Canonical: canonical, Digest: receipt.Digest(canonical)}, nil
}

// utf8BOM is the byte order mark PyYAML and libyaml skip at the start.
const utf8BOM = "\xef\xbb\xbf"

func compileHigh(src []byte) (map[string]any, *CustomError) {
	if len(src) > MaxSourceBytes {
		return nil, newError(codeTooLarge, 0, 0, "the source is larger than 64 KiB")
	}
	src = bytes.TrimPrefix(src, []byte(utf8BOM))
	if err := prescan(src); err != nil {
		return nil, err
	}
	doc, err := parseSingle(src)
	if err != nil {
		return nil, err
	}
	if err := tooDeep(doc.Content[0], 1); err != nil {
		return nil, err
	}
	c := compiler{walker: newWalker(src)}
	return c.top(doc.Content[0])
}

// parseSingle parses exactly one YAML document into a node tree. yaml.v3
// builds the tree without resolving aliases or applying merges.
func parseSingle(src []byte) (doc *yaml.Node, cerr *CustomError) {
	defer func() {
		// yaml.v3 reports internal errors by panicking; a source must never
		// crash the caller.
		if r := recover(); r != nil {
			doc, cerr = nil, newError(codeSyntax, 0, 0, "the YAML parser failed on this source")
		}
	}()
	dec := yaml.NewDecoder(bytes.NewReader(src))
	var first yaml.Node
	if err := dec.Decode(&first); err != nil {
		if err == io.EOF {
			return nil, newError(codeEmptyDocument, 0, 0, "the document is empty")
		}
		return nil, syntaxError(src, err)
	}
	var second yaml.Node
	switch err := dec.Decode(&second); {
	case err == io.EOF:
	case err != nil:
		return nil, syntaxError(src, err)
	default:
		return nil, newError(codeMultipleDocuments, second.Line, second.Column, "only one YAML document is allowed")
	}
	if first.Kind != yaml.DocumentNode || len(first.Content) != 1 {
		return nil, newError(codeEmptyDocument, 0, 0, "the document is empty")
	}
	return &first, nil
}

var unknownAnchor = regexp.MustCompile(`^yaml: unknown anchor '(.*)' referenced$`)

// findAlias returns the position of the first "*name" in src that ends at a
// token boundary, or 0, 0. The name is used for the search only, never
// reported.
func findAlias(src []byte, name string) (line, col int) {
	needle := []byte("*" + name)
	for off := 0; ; {
		i := bytes.Index(src[off:], needle)
		if i < 0 {
			return 0, 0
		}
		end := off + i + len(needle)
		if end == len(src) || bytes.IndexByte([]byte(" \t\r\n,]}"), src[end]) >= 0 {
			return positionOf(src, off+i)
		}
		off += i + 1
	}
}

var yamlErrLine = regexp.MustCompile(`^yaml: (?:line ([0-9]+): )?(.*)$`)

// safeProblem matches the parser's problem texts, which are constants of the
// libyaml port; quoted tokens of more than one character (which could come
// from the source) are never passed on.
var safeProblem = regexp.MustCompile(`^(?:[a-zA-Z0-9 ,<>()-]|'[^']?')+$`)

// syntaxError converts a yaml.v3 error to a *CustomError without echoing the
// source: only the line number and a constant problem text survive.
func syntaxError(src []byte, err error) *CustomError {
	msg := err.Error()
	if m := unknownAnchor.FindStringSubmatch(msg); m != nil {
		line, col := findAlias(src, m[1])
		return newError(codeAlias, line, col, msgAlias)
	}
	line := 0
	problem := ""
	if m := yamlErrLine.FindStringSubmatch(msg); m != nil {
		if m[1] != "" {
			line, _ = strconv.Atoi(m[1])
		}
		problem = m[2]
	}
	if strings.HasPrefix(problem, "exceeded max depth") {
		return newError(codeTooDeep, line, 0, "lists and mappings nest deeper than 16 levels")
	}
	if problem != "" && len(problem) <= 120 && safeProblem.MatchString(problem) {
		return newError(codeSyntax, line, 0, "invalid YAML: "+problem)
	}
	return newError(codeSyntax, line, 0, "invalid YAML")
}
