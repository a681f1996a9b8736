package profiles

import (
	"fmt"

	"go.yaml.in/yaml/v3"
)

// The minion receives the high data as canonical JSON, whose objects are
// sorted by key, while Salt renders an sls into dictionaries in source order.
// (and the compiler sorts arguments). Salt's evaluation depends on those
// orders in four places; this pass makes the compiled data evaluate as the
// sls would, whatever the key order:
//
//  1. State.requisite_in turns a plain-string target of require_in, watch_in,
//     onfail_in, onchanges_in, prereq, prereq_in, use and use_in into
//     {first module of that id: id}, or, when the string is no id, into
//     {module: id} of the first declaration (in dictionary order) whose name
//     argument equals it. The compiler performs the same conversion in source
//     order (a string matching nothing is kept: Salt skips it either way).
//  2. use and use_in copy arguments from the states find_name matches; a
//     target that is not an id could match several, and the last would win.
//     Their targets must therefore be ids of the source (declaring the module
//     named, for the {module: id} form). listen_in entries must be
//     {module: id} mappings (Salt's call_listen fails on strings).
//  3. State.verify_high flags a "recursive requisite" between two ids that
//     require, watch, prereq or onchange each other, but its bookkeeping keeps
//     only the last such argument per id, so whether it notices depends on
//     dictionary and argument order. Such mutual requisites always fail in
//     Salt; they are refused (codeRequisiteCycle) so that both readings agree.
//  4. State.order_chunks sorts chunks by (order, state+name+fun) and leaves
//     ties in dictionary order. Implicit orders are all distinct; explicit
//     orders that tie with another chunk of the same state, name and function
//     are refused (codeAmbiguousOrder). Explicit orders are bounded by
//     ±maxExplicitOrder so that "last" and negative orders rank the same
//     whatever order_chunks' running cap is.

// maxExplicitOrder bounds explicit integer orders (see point 4 above).
const maxExplicitOrder = 100000

// isRequisiteIn reports whether State.requisite_in reads key k (salt/state.py
// 3006, the req_in set).
func isRequisiteIn(k string) bool {
	switch k {
	case "require_in", "watch_in", "onfail_in", "onchanges_in", "use", "use_in", "prereq", "prereq_in":
		return true
	}
	return false
}

// decl is one compiled declaration (one module.function under one id).
type decl struct {
	id, module, fun string
	order           any    // int64, "first" or "last"
	name            string // the name argument, or the id
	explicitName    bool   // name came from a name argument
	names           []any  // the names argument, if any
	node            *yaml.Node
}

// reqRef is one item of a top-level requisite list, kept to be rewritten in
// place by resolve.
type reqRef struct {
	id   string // the declaring state id
	key  string
	list []any
	idx  int
	node *yaml.Node
}

// resolve applies the rules above to the compiled data.
func (c *compiler) resolve() *CustomError {
	edges := make(map[[2]string]struct{})
	for _, r := range c.reqs {
		if err := c.checkMutual(r, edges); err != nil {
			return err
		}
		if s, ok := r.list[r.idx].(string); ok && isRequisiteIn(r.key) {
			if target := c.stringTarget(s); target != nil {
				r.list[r.idx] = target
			}
		}
		if err := c.checkUse(r); err != nil {
			return err
		}
	}
	return c.checkOrderTies()
}

// stringTarget converts a plain requisite_in target as Salt does, in source
// order, or returns nil when nothing matches.
func (c *compiler) stringTarget(s string) map[string]any {
	if mods, ok := c.modules[s]; ok {
		return map[string]any{mods[0]: s}
	}
	for _, d := range c.decls {
		if d.explicitName && d.name == s {
			return map[string]any{d.module: d.id}
		}
	}
	return nil
}

func (c *compiler) checkUse(r reqRef) *CustomError {
	switch r.key {
	case "listen_in":
		if _, ok := r.list[r.idx].(string); ok {
			return errAt(r.node, codeInvalidRequisite, "listen_in entries must be {module: id} mappings")
		}
	case "use", "use_in":
		const msg = "use and use_in must name a state id of this source (and a module it declares)"
		switch v := r.list[r.idx].(type) {
		case string:
			return errAt(r.node, codeInvalidRequisite, msg) // stringTarget found nothing
		case map[string]any:
			for mod, id := range v {
				mods, ok := c.modules[id.(string)]
				if !ok || !contains(mods, mod) {
					return errAt(r.node, codeInvalidRequisite, msg)
				}
			}
		}
	}
	return nil
}

// checkMutual refuses a require/watch/prereq/onchanges reference to an id that
// references the declaring id back (point 3).
func (c *compiler) checkMutual(r reqRef, edges map[[2]string]struct{}) *CustomError {
	switch r.key {
	case "require", "watch", "prereq", "onchanges":
	default:
		return nil
	}
	target := ""
	switch v := r.list[r.idx].(type) {
	case string:
		target = v
	case map[string]any:
		for _, t := range v {
			target, _ = t.(string)
		}
	}
	if _, ok := c.modules[target]; !ok || target == r.id {
		return nil
	}
	if _, back := edges[[2]string{target, r.id}]; back {
		return errAt(r.node, codeRequisiteCycle,
			"two states require, watch, prereq or onchange each other: Salt reports a recursive requisite")
	}
	edges[[2]string{r.id, target}] = struct{}{}
	return nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// checkOrderTies refuses two chunks that State.order_chunks would rank equal:
// same effective order (class, value, name_order) and same state+name+fun.
func (c *compiler) checkOrderTies() *CustomError {
	seen := make(map[string]struct{}, len(c.decls))
	for _, d := range c.decls {
		class, n := orderRank(d.order)
		if d.names == nil {
			k := fmt.Sprintf("%d|%d|0|%s%s%s", class, n, d.module, d.name, d.fun)
			if _, tie := seen[k]; tie {
				return errAt(d.node, codeAmbiguousOrder, msgOrderTie)
			}
			seen[k] = struct{}{}
			continue
		}
		for k, name := range dedupNames(d.names) {
			key := fmt.Sprintf("%d|%d|%d|%s%s%s", class, n, k+1, d.module, name, d.fun)
			if _, tie := seen[key]; tie {
				return errAt(d.node, codeAmbiguousOrder, msgOrderTie)
			}
			seen[key] = struct{}{}
		}
	}
	return nil
}

const msgOrderTie = "two states with the same module, function and name share an explicit order: " +
	"Salt would run them in an order that depends on their ids; give them different orders"

// orderRank maps an order to its rank in State.order_chunks: non-negative
// integers and "first" (0) by value, then negative integers (cap+1000000+n),
// then "last" (cap+1000000).
func orderRank(o any) (class int, n int64) {
	switch v := o.(type) {
	case int64:
		if v < 0 {
			return 1, v
		}
		return 0, v
	case string:
		if v == "last" {
			return 2, 0
		}
	}
	return 0, 0 // "first"
}

// dedupNames returns the chunk names of a names list after Salt's
// de-duplication in compile_high_data ("if _name not in names").
func dedupNames(names []any) []string {
	var out []string
	seen := make(map[string]struct{}, len(names))
	for _, e := range names {
		var name, key string
		switch v := e.(type) {
		case string:
			name, key = v, "s"+v
		case map[string]any:
			for k := range v {
				name = k
			}
			key = "d" + fmt.Sprint(v)
		}
		if _, dup := seen[key]; dup {
			continue
		}
		seen[key] = struct{}{}
		out = append(out, name)
	}
	return out
}
