package profiles

import (
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// customSLS and customSaltenv are the __sls__ and __env__ of every compiled
// state id: the high data is exactly what Salt 3006 renders from the same
// YAML saved as salt://oduflow/custom.sls in saltenv base (so a requisite
// "- sls: oduflow.custom" means the custom state itself).
const (
	customSLS     = "oduflow.custom"
	customSaltenv = "base"
	// firstAutoOrder is the first implicit order Salt gives an sls
	// declaration (BaseHighState.iorder = 10000, state_auto_order: True).
	firstAutoOrder = 10000
)

// splitFunction splits "module.function" where both parts are identifiers
// starting with a letter ([A-Za-z][A-Za-z0-9_]*).
func splitFunction(s string) (module, function string, ok bool) {
	i := strings.IndexByte(s, '.')
	if i < 0 {
		return "", "", false
	}
	module, function = s[:i], s[i+1:]
	if !isIdent(module) || !isIdent(function) || !isLetter(module[0]) || !isLetter(function[0]) {
		return "", "", false
	}
	return module, function, true
}

func isLetter(c byte) bool { return c|0x20 >= 'a' && c|0x20 <= 'z' }

// isIdent reports whether s matches [A-Za-z_][A-Za-z0-9_]*.
func isIdent(s string) bool {
	if s == "" || s[0] >= '0' && s[0] <= '9' {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !isLetter(c) && c != '_' && (c < '0' || c > '9') {
			return false
		}
	}
	return true
}

// requisiteArgs are the arguments whose value Salt reads as a requisite list
// (salt/state.py STATE_REQUISITE_KEYWORDS and STATE_REQUISITE_IN_KEYWORDS,
// plus use/use_in; onfail_stop and prerequired are not lists of references).
func isRequisite(k string) bool {
	switch k {
	case "require", "require_any", "require_in",
		"watch", "watch_any", "watch_in",
		"onchanges", "onchanges_any", "onchanges_in",
		"onfail", "onfail_any", "onfail_all", "onfail_in",
		"prereq", "prereq_in", "listen", "listen_in", "use", "use_in":
		return true
	}
	return false
}

// compiler turns the document's top-level mapping into Salt high data. It
// records, in source order, what the Salt-semantics pass (semantics.go) needs.
type compiler struct {
	walker
	nextOrder int64
	modules   map[string][]string // id -> its modules in source order
	decls     []*decl             // declarations in source order
	reqs      []reqRef            // top-level requisite items
	curID     string              // the state id being compiled
}

type arg struct {
	key string
	val any
}

func (c *compiler) top(root *yaml.Node) (map[string]any, *CustomError) {
	if err := c.check(root, 1); err != nil {
		return nil, err
	}
	switch root.Kind {
	case yaml.MappingNode:
	case yaml.ScalarNode:
		if v, err := c.scalar(root); err == nil && v == nil {
			return nil, errAt(root, codeEmptyDocument, "the document is empty")
		}
		return nil, errAt(root, codeNotMapping, "the top level must be a mapping of state ids")
	default:
		return nil, errAt(root, codeNotMapping, "the top level must be a mapping of state ids")
	}
	if len(root.Content) == 0 {
		return nil, errAt(root, codeEmptyDocument, "the document declares no state id")
	}
	high := make(map[string]any, len(root.Content)/2)
	ids := 0
	err := c.pairs(root, 1, func(kn *yaml.Node, id string, vn *yaml.Node) *CustomError {
		if ids++; ids > maxStateIDs {
			return errAt(kn, codeTooManyIDs, "more than 100 state ids")
		}
		if err := checkID(kn, id); err != nil {
			return err
		}
		c.curID = id
		body, err := c.declaration(id, vn)
		if err != nil {
			return err
		}
		body["__sls__"] = customSLS
		body["__env__"] = customSaltenv
		high[id] = body
		return nil
	})
	if err != nil {
		return nil, err
	}
	if err := c.resolve(); err != nil {
		return nil, err
	}
	return high, nil
}

func checkID(kn *yaml.Node, id string) *CustomError {
	switch id {
	case "include", "extend", "exclude":
		return errAt(kn, codeForbiddenDeclaration, "include, extend and exclude are not allowed: the source must be self-contained")
	case "":
		return errAt(kn, codeInvalidID, "a state id must not be empty")
	}
	if strings.HasPrefix(id, "__") {
		return errAt(kn, codeInvalidID, "state ids starting with __ are reserved by Salt")
	}
	if strings.Contains(id, "_|-") {
		return errAt(kn, codeInvalidID, "state ids must not contain _|- (Salt's return key separator)")
	}
	if strings.ContainsFunc(id, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return errAt(kn, codeInvalidID, "state ids must not contain control characters")
	}
	return nil
}

// declaration compiles the value of a state id: a mapping of module.function
// keys to argument lists, or the short form "module.function".
func (c *compiler) declaration(id string, vn *yaml.Node) (map[string]any, *CustomError) {
	if err := c.check(vn, 2); err != nil {
		return nil, err
	}
	const notDecl = "a state id must map to function declarations (module.function: [arguments])"
	switch vn.Kind {
	case yaml.ScalarNode:
		s, ok, err := c.stringValue(vn, 2)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, errAt(vn, codeInvalidState, notDecl)
		}
		mod, fun, ok := splitFunction(s)
		if !ok {
			if strings.Contains(s, ".") {
				return nil, errAt(vn, codeInvalidFunction, "a function must be a full module.function name")
			}
			return nil, errAt(vn, codeInvalidState, notDecl)
		}
		return map[string]any{mod: c.finish(id, mod, fun, vn, nil)}, nil
	case yaml.MappingNode:
	default:
		return nil, errAt(vn, codeInvalidState, notDecl)
	}
	if len(vn.Content) == 0 {
		return nil, errAt(vn, codeInvalidState, "a state id must declare at least one function")
	}
	body := make(map[string]any, len(vn.Content)/2+2)
	err := c.pairs(vn, 2, func(kn *yaml.Node, k string, an *yaml.Node) *CustomError {
		mod, fun, ok := splitFunction(k)
		if !ok {
			return errAt(kn, codeInvalidFunction, "a function must be a full module.function name")
		}
		if _, dup := body[mod]; dup {
			return errAt(kn, codeDuplicateModule, "two functions of the same module under one state id: use separate state ids")
		}
		args, err := c.arguments(an, 3, true)
		if err != nil {
			return err
		}
		body[mod] = c.finish(id, mod, fun, kn, args)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return body, nil
}

// finish builds a state declaration list: the function name first, then the
// arguments sorted by name, with Salt's implicit {"order": n} when the source
// gives none (BaseHighState._handle_iorder, in source order).
func (c *compiler) finish(id, mod, fun string, at *yaml.Node, args []arg) []any {
	d := &decl{id: id, module: mod, fun: fun, node: at, name: id}
	for _, a := range args {
		switch a.key {
		case "order":
			d.order = a.val
		case "name":
			d.name, d.explicitName = a.val.(string), true
		case "names":
			d.names = a.val.([]any)
		}
	}
	if d.order == nil {
		d.order = firstAutoOrder + c.nextOrder
		args = append(args, arg{key: "order", val: d.order})
		c.nextOrder++
	}
	slices.SortFunc(args, func(a, b arg) int { return strings.Compare(a.key, b.key) })
	out := make([]any, 0, len(args)+1)
	out = append(out, fun)
	for _, a := range args {
		out = append(out, map[string]any{a.key: a.val})
	}
	if c.modules == nil {
		c.modules = make(map[string][]string)
	}
	c.modules[id] = append(c.modules[id], mod)
	c.decls = append(c.decls, d)
	return out
}

// arguments compiles a function's argument list: a list of single-key
// mappings. top is false inside a names entry.
func (c *compiler) arguments(n *yaml.Node, depth int, top bool) ([]arg, *CustomError) {
	if err := c.check(n, depth); err != nil {
		return nil, err
	}
	if n.Kind != yaml.SequenceNode {
		return nil, errAt(n, codeArgumentsNotList,
			"a function's value must be a list of arguments; write [] or the short form id: module.function when there are none")
	}
	args := make([]arg, 0, len(n.Content)+1)
	for _, item := range n.Content {
		if err := c.check(item, depth+1); err != nil {
			return nil, err
		}
		if item.Kind != yaml.MappingNode || len(item.Content) != 2 {
			return nil, errAt(item, codeInvalidArgument, "each argument must be a single-key mapping (- name: value)")
		}
		kn, vn := item.Content[0], item.Content[1]
		k, err := c.key(kn, depth+2)
		if err != nil {
			return nil, err
		}
		if err := checkArgName(kn, k, top); err != nil {
			return nil, err
		}
		for _, a := range args {
			if a.key == k {
				return nil, errAt(kn, codeDuplicateArgument, "the same argument is given twice for one function")
			}
		}
		v, err := c.argValue(k, vn, depth+2, top)
		if err != nil {
			return nil, err
		}
		args = append(args, arg{key: k, val: v})
	}
	return args, nil
}

func checkArgName(kn *yaml.Node, k string, top bool) *CustomError {
	switch {
	case k == "parallel":
		return errAt(kn, codeParallel, "explicit parallel is not allowed")
	case strings.HasPrefix(k, "__") || k == "fun" || k == "state" || k == "prerequired":
		return errAt(kn, codeReservedArgument, "this argument name is reserved by Salt")
	case !isIdent(k):
		return errAt(kn, codeInvalidArgument, "argument names must be identifiers (letters, digits, _)")
	case !top && (k == "names" || k == "name" || k == "order"):
		return errAt(kn, codeInvalidNames, "name, names and order cannot be set inside a names entry")
	}
	return nil
}

func (c *compiler) argValue(k string, vn *yaml.Node, depth int, top bool) (any, *CustomError) {
	switch {
	case isRequisite(k):
		return c.requisite(k, vn, depth, top)
	case k == "name":
		s, ok, err := c.stringValue(vn, depth)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, errAt(vn, codeInvalidName, "name must be a string: quote it")
		}
		return s, nil
	case k == "names":
		return c.names(vn, depth)
	case k == "order":
		if err := c.check(vn, depth); err != nil {
			return nil, err
		}
		if vn.Kind == yaml.ScalarNode {
			v, err := c.scalar(vn)
			if err != nil {
				return nil, err
			}
			switch v := v.(type) {
			case int64:
				if v >= -maxExplicitOrder && v <= maxExplicitOrder {
					return v, nil
				}
			case string:
				if v == "first" || v == "last" {
					return v, nil
				}
			}
		}
		return nil, errAt(vn, codeInvalidOrder, "order must be an integer within ±100000, first or last")
	}
	return c.value(vn, depth)
}

// requisite validates a requisite list: plain state ids or {module: id}
// single-key mappings, kept verbatim.
func (c *compiler) requisite(key string, n *yaml.Node, depth int, top bool) (any, *CustomError) {
	const shape = "a requisite must be a list of state ids or single-key mappings {module: id}"
	if err := c.check(n, depth); err != nil {
		return nil, err
	}
	if n.Kind != yaml.SequenceNode {
		return nil, errAt(n, codeInvalidRequisite, shape)
	}
	out := make([]any, 0, len(n.Content))
	for _, item := range n.Content {
		if item.Kind == yaml.MappingNode {
			if err := c.check(item, depth+1); err != nil {
				return nil, err
			}
			if len(item.Content) != 2 {
				return nil, errAt(item, codeInvalidRequisite, shape)
			}
			k, err := c.key(item.Content[0], depth+2)
			if err != nil {
				return nil, err
			}
			if !isIdent(k) {
				return nil, errAt(item.Content[0], codeInvalidRequisite, "a requisite type must be a module name without dots")
			}
			s, ok, err := c.stringValue(item.Content[1], depth+2)
			if err != nil {
				return nil, err
			}
			if !ok || s == "" {
				return nil, errAt(item.Content[1], codeInvalidRequisite, "a requisite target must be a non-empty string")
			}
			out = append(out, map[string]any{k: s})
			continue
		}
		s, ok, err := c.stringValue(item, depth+1)
		if err != nil {
			return nil, err
		}
		if !ok || s == "" {
			return nil, errAt(item, codeInvalidRequisite, shape)
		}
		out = append(out, s)
	}
	if top {
		for i, item := range n.Content {
			c.reqs = append(c.reqs, reqRef{id: c.curID, key: key, list: out, idx: i, node: item})
		}
	}
	return out, nil
}

// names validates a names list: strings, or {name: [arguments]} entries.
func (c *compiler) names(n *yaml.Node, depth int) (any, *CustomError) {
	const shape = "names must be a list of strings or single-key mappings {name: [arguments]}"
	if err := c.check(n, depth); err != nil {
		return nil, err
	}
	if n.Kind != yaml.SequenceNode {
		return nil, errAt(n, codeInvalidNames, shape)
	}
	out := make([]any, 0, len(n.Content))
	for _, item := range n.Content {
		if item.Kind != yaml.MappingNode {
			s, ok, err := c.stringValue(item, depth+1)
			if err != nil {
				return nil, err
			}
			if !ok {
				return nil, errAt(item, codeInvalidNames, shape)
			}
			out = append(out, s)
			continue
		}
		if err := c.check(item, depth+1); err != nil {
			return nil, err
		}
		if len(item.Content) != 2 {
			return nil, errAt(item, codeInvalidNames, shape)
		}
		k, err := c.key(item.Content[0], depth+2)
		if err != nil {
			return nil, err
		}
		if item.Content[1].Kind != yaml.SequenceNode {
			if err := c.check(item.Content[1], depth+2); err != nil {
				return nil, err
			}
			return nil, errAt(item.Content[1], codeInvalidNames, shape)
		}
		args, err := c.arguments(item.Content[1], depth+2, false)
		if err != nil {
			return nil, err
		}
		slices.SortFunc(args, func(a, b arg) int { return strings.Compare(a.key, b.key) })
		list := make([]any, 0, len(args))
		for _, a := range args {
			list = append(list, map[string]any{a.key: a.val})
		}
		out = append(out, map[string]any{k: list})
	}
	return out, nil
}
