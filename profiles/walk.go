package profiles

import (
	"bytes"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

const (
	msgMergeKey    = "merge keys (<<) are not allowed: write the keys out"
	msgAnchor      = "anchors (&name) are not allowed: write the value out"
	msgAlias       = "aliases (*name) are not allowed: write the value out"
	msgExplicitTag = "explicit tags (!tag, !!type, !) are not allowed: quote strings instead"
	msgDuplicate   = "duplicate key in one mapping"
	msgNonString   = "keys must be strings: quote the key"
)

// walker converts yaml.v3 nodes to JSON-like Go values while enforcing the
// node-level rules: no anchors, aliases, tags or merge keys, no duplicate or
// non-string keys, and the depth, length and scalar limits.
type walker struct {
	src   []byte
	bang  bool       // src contains '!': tags are possible
	lines *lineIndex // built on first use
}

func newWalker(src []byte) walker {
	return walker{src: src, bang: bytes.IndexByte(src, '!') >= 0}
}

func (w *walker) lineIndex() *lineIndex {
	if w.lines == nil {
		w.lines = newLineIndex(w.src)
	}
	return w.lines
}

func errAt(n *yaml.Node, code errorCode, msg string) *CustomError {
	return newError(code, n.Line, n.Column, msg)
}

// tooDeep finds, in document order, the first collection nested deeper than
// maxDepth (the top-level collection has depth 1), so that the limit is
// reported before any rule about what the nodes mean.
func tooDeep(n *yaml.Node, depth int) *CustomError {
	if n.Kind != yaml.MappingNode && n.Kind != yaml.SequenceNode {
		return nil
	}
	if depth > maxDepth {
		return errAt(n, codeTooDeep, "lists and mappings nest deeper than 16 levels")
	}
	for _, c := range n.Content {
		if err := tooDeep(c, depth+1); err != nil {
			return err
		}
	}
	return nil
}

// keySet detects duplicate keys: a linear scan for the small mappings that
// are the rule, a map beyond 16 keys.
type keySet struct {
	small [16]string
	n     int
	big   map[string]struct{}
}

// add records k and reports false when it was already present.
func (s *keySet) add(k string) bool {
	if s.big != nil {
		if _, dup := s.big[k]; dup {
			return false
		}
		s.big[k] = struct{}{}
		return true
	}
	for _, x := range s.small[:s.n] {
		if x == k {
			return false
		}
	}
	if s.n < len(s.small) {
		s.small[s.n] = k
		s.n++
		return true
	}
	s.big = make(map[string]struct{}, 2*len(s.small))
	for _, x := range s.small {
		s.big[x] = struct{}{}
	}
	s.big[k] = struct{}{}
	return true
}

// check applies the rules every node obeys, whatever its place.
func (w *walker) check(n *yaml.Node, depth int) *CustomError {
	if n.Kind == yaml.AliasNode {
		return errAt(n, codeAlias, msgAlias)
	}
	if n.Anchor != "" {
		return errAt(n, codeAnchor, msgAnchor)
	}
	// yaml.v3 marks explicit tags with TaggedStyle, except the non-specific
	// tag "!", which only the source shows: no untagged node starts with '!'.
	if n.Style&yaml.TaggedStyle != 0 || w.bang && w.lineIndex().byteAt(n.Line, n.Column) == '!' {
		return errAt(n, codeExplicitTag, msgExplicitTag)
	}
	switch n.Kind {
	case yaml.MappingNode, yaml.SequenceNode:
		if depth > maxDepth {
			return errAt(n, codeTooDeep, "lists and mappings nest deeper than 16 levels")
		}
		if n.Kind == yaml.MappingNode && depth > 1 && len(n.Content)/2 > maxItems ||
			n.Kind == yaml.SequenceNode && len(n.Content) > maxItems {
			return errAt(n, codeTooManyItems, "a list or mapping has more than 1000 entries")
		}
	case yaml.ScalarNode:
		if len(n.Value) > maxScalarBytes {
			return errAt(n, codeScalarTooLong, "a scalar is longer than 16 KiB")
		}
		if !utf8.ValidString(n.Value) {
			return errAt(n, codeInvalidUTF8, "a scalar decodes to invalid UTF-8")
		}
	default:
		return errAt(n, codeSyntax, "unexpected YAML node")
	}
	return nil
}

// scalar returns the value of a scalar node that passed check.
func (w *walker) scalar(n *yaml.Node) (any, *CustomError) {
	if n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle|yaml.LiteralStyle|yaml.FoldedStyle) != 0 {
		return n.Value, nil
	}
	if n.Tag == "!!merge" {
		return nil, errAt(n, codeMergeKey, msgMergeKey)
	}
	v, err := resolvePlain(n.Value, n.Tag)
	if err != nil {
		err.Line, err.Column = n.Line, n.Column
		return nil, err
	}
	return v, nil
}

// key returns the string value of a mapping key.
func (w *walker) key(n *yaml.Node, depth int) (string, *CustomError) {
	if err := w.check(n, depth); err != nil {
		return "", err
	}
	if n.Kind != yaml.ScalarNode {
		return "", errAt(n, codeNonStringKey, "keys must be plain strings, not lists or mappings")
	}
	v, err := w.scalar(n)
	if err != nil {
		return "", err
	}
	s, ok := v.(string)
	if !ok {
		return "", errAt(n, codeNonStringKey, msgNonString)
	}
	return s, nil
}

// pairs iterates the entries of a mapping node, refusing bad and duplicate
// keys. fn receives the key node, its string, and the value node.
func (w *walker) pairs(n *yaml.Node, depth int, fn func(k *yaml.Node, key string, v *yaml.Node) *CustomError) *CustomError {
	var seen keySet
	for i := 0; i+1 < len(n.Content); i += 2 {
		kn, vn := n.Content[i], n.Content[i+1]
		k, err := w.key(kn, depth+1)
		if err != nil {
			return err
		}
		if !seen.add(k) {
			return errAt(kn, codeDuplicateKey, msgDuplicate)
		}
		if err := fn(kn, k, vn); err != nil {
			return err
		}
	}
	return nil
}

// value converts any node (an argument value) to nil, bool, int64, float64,
// string, []any or map[string]any. depth is the depth n would have if it is a
// collection.
func (w *walker) value(n *yaml.Node, depth int) (any, *CustomError) {
	if err := w.check(n, depth); err != nil {
		return nil, err
	}
	switch n.Kind {
	case yaml.ScalarNode:
		return w.scalar(n)
	case yaml.SequenceNode:
		out := make([]any, 0, len(n.Content))
		for _, c := range n.Content {
			v, err := w.value(c, depth+1)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		return out, nil
	default: // MappingNode; check refused every other kind
		out := make(map[string]any, len(n.Content)/2)
		err := w.pairs(n, depth, func(_ *yaml.Node, k string, vn *yaml.Node) *CustomError {
			v, err := w.value(vn, depth+1)
			if err != nil {
				return err
			}
			out[k] = v
			return nil
		})
		if err != nil {
			return nil, err
		}
		return out, nil
	}
}

// stringValue returns the string of a scalar node, or ok false when the node
// is not a scalar resolving to a string. A node-level violation (anchor, tag,
// ambiguous scalar, ...) is returned as an error.
func (w *walker) stringValue(n *yaml.Node, depth int) (s string, ok bool, err *CustomError) {
	if err := w.check(n, depth); err != nil {
		return "", false, err
	}
	if n.Kind != yaml.ScalarNode {
		return "", false, nil
	}
	v, err := w.scalar(n)
	if err != nil {
		return "", false, err
	}
	s, ok = v.(string)
	return s, ok, nil
}
