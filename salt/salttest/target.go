package salttest

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// acceptedIDs returns the ids of all minions with an accepted key, sorted.
func (s *Master) acceptedIDs() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	ids := make([]string, 0, len(s.minions))
	for id := range s.minions {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// checkMinions is CkMinions.check_minions over the accepted keys for list, glob, pcre and
// compound targets (grain, pillar, ipcidr, range, nodegroup: nothing matches, as on a master
// without minion data).
func (s *Master) checkMinions(tgt any, tgtType string) (minions, missing []string) {
	ids := s.acceptedIDs()
	switch tgtType {
	case "list":
		var expr []string
		switch x := tgt.(type) {
		case string:
			for _, p := range strings.Split(x, ",") {
				if p != "" {
					expr = append(expr, p)
				}
			}
		case []any:
			for _, el := range x {
				if str, ok := el.(string); ok {
					expr = append(expr, str)
				}
			}
		}
		return listMatch(expr, ids)
	case "glob":
		str, _ := tgt.(string)
		return globMatch(str, ids), []string{}
	case "pcre":
		str, _ := tgt.(string)
		return pcreMatch(str, ids), []string{}
	case "compound":
		str, _ := tgt.(string)
		return compoundMatch(str, ids), []string{}
	}
	return []string{}, []string{}
}

func listMatch(expr, ids []string) (minions, missing []string) {
	known := map[string]bool{}
	for _, id := range ids {
		known[id] = true
	}
	minions, missing = []string{}, []string{}
	for _, e := range expr {
		if known[e] {
			minions = append(minions, e)
		} else {
			missing = append(missing, e)
		}
	}
	return minions, missing
}

func globMatch(pattern string, ids []string) []string {
	out := []string{}
	re, err := fnmatchRegexp(pattern) // once, not per id: fleets have thousands
	if err != nil {
		return out
	}
	for _, id := range ids {
		if re.MatchString(id) {
			out = append(out, id)
		}
	}
	return out
}

func pcreMatch(expr string, ids []string) []string {
	out := []string{}
	re, err := regexp.Compile(`^(?:` + expr + `)`)
	if err != nil {
		return out
	}
	for _, id := range ids {
		if re.MatchString(id) {
			out = append(out, id)
		}
	}
	return out
}

// fnmatchRegexp translates a pattern of Python's fnmatch.fnmatchcase (*, ?, [seq], [!seq]; '/' is
// not special) into an anchored regexp.
func fnmatchRegexp(pattern string) (*regexp.Regexp, error) {
	var b strings.Builder
	b.WriteString("^")
	for i := 0; i < len(pattern); i++ {
		c := pattern[i]
		switch c {
		case '*':
			b.WriteString(".*")
		case '?':
			b.WriteString(".")
		case '[':
			j := i + 1
			if j < len(pattern) && pattern[j] == '!' {
				j++
			}
			if j < len(pattern) && pattern[j] == ']' {
				j++
			}
			for j < len(pattern) && pattern[j] != ']' {
				j++
			}
			if j >= len(pattern) {
				b.WriteString(`\[`)
				continue
			}
			set := pattern[i+1 : j]
			if strings.HasPrefix(set, "!") {
				set = "^" + set[1:]
			}
			b.WriteString("[" + strings.ReplaceAll(set, `\`, `\\`) + "]")
			i = j
		default:
			b.WriteString(regexp.QuoteMeta(string(c)))
		}
	}
	b.WriteString("$")
	return regexp.Compile(b.String())
}

// compoundMatch evaluates a compound target: words joined by and/or/not and parentheses
// (adjacent words are joined by "and"). Plain words are globs; L@ is a comma-separated list,
// E@ a regex; other engines (G@, I@, P@, S@, J@, N@, R@) match nothing here.
func compoundMatch(expr string, ids []string) []string {
	tokens := tokenizeCompound(expr)
	p := &compoundParser{tokens: tokens, ids: ids}
	set, ok := p.orExpr()
	if !ok || p.pos != len(tokens) {
		return []string{}
	}
	out := []string{}
	for _, id := range ids {
		if set[id] {
			out = append(out, id)
		}
	}
	return out
}

func tokenizeCompound(expr string) []string {
	var out []string
	for _, w := range strings.Fields(expr) {
		for strings.HasPrefix(w, "(") {
			out = append(out, "(")
			w = w[1:]
		}
		closing := 0
		for strings.HasSuffix(w, ")") && !strings.Contains(w, "@") {
			closing++
			w = w[:len(w)-1]
		}
		if w != "" {
			out = append(out, w)
		}
		for ; closing > 0; closing-- {
			out = append(out, ")")
		}
	}
	return out
}

type compoundParser struct {
	tokens []string
	pos    int
	ids    []string
}

func (p *compoundParser) peek() string {
	if p.pos < len(p.tokens) {
		return p.tokens[p.pos]
	}
	return ""
}

func (p *compoundParser) orExpr() (map[string]bool, bool) {
	left, ok := p.andExpr()
	for ok && p.peek() == "or" {
		p.pos++
		var right map[string]bool
		right, ok = p.andExpr()
		for k := range right {
			left[k] = true
		}
	}
	return left, ok
}

func (p *compoundParser) andExpr() (map[string]bool, bool) {
	left, ok := p.unary()
	for ok {
		t := p.peek()
		if t == "" || t == "or" || t == ")" {
			break
		}
		if t == "and" {
			p.pos++
		}
		var right map[string]bool
		right, ok = p.unary()
		for k := range left {
			if !right[k] {
				delete(left, k)
			}
		}
	}
	return left, ok
}

func (p *compoundParser) unary() (map[string]bool, bool) {
	t := p.peek()
	switch t {
	case "", "and", "or", ")":
		return nil, false
	case "not":
		p.pos++
		inner, ok := p.unary()
		out := map[string]bool{}
		for _, id := range p.ids {
			if !inner[id] {
				out[id] = true
			}
		}
		return out, ok
	case "(":
		p.pos++
		inner, ok := p.orExpr()
		if !ok || p.peek() != ")" {
			return nil, false
		}
		p.pos++
		return inner, true
	}
	p.pos++
	var matched []string
	switch {
	case strings.HasPrefix(t, "L@"):
		matched, _ = listMatch(strings.Split(t[2:], ","), p.ids)
	case strings.HasPrefix(t, "E@"):
		matched = pcreMatch(t[2:], p.ids)
	case len(t) > 1 && t[1] == '@':
		matched = nil
	default:
		matched = globMatch(t, p.ids)
	}
	out := map[string]bool{}
	for _, m := range matched {
		out[m] = true
	}
	return out, true
}

// pyRepr renders a decoded value like Python's repr() (for "could not resolve" messages).
func pyRepr(v any) string {
	switch x := v.(type) {
	case nil:
		return "None"
	case bool:
		if x {
			return "True"
		}
		return "False"
	case string:
		if strings.Contains(x, "'") && !strings.Contains(x, `"`) {
			return `"` + x + `"`
		}
		return "'" + strings.ReplaceAll(strings.ReplaceAll(x, `\`, `\\`), "'", `\'`) + "'"
	case int64:
		return strconv.FormatInt(x, 10)
	case []any:
		parts := make([]string, len(x))
		for i, el := range x {
			parts[i] = pyRepr(el)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case *omap:
		parts := make([]string, x.Len())
		for i := range x.Keys {
			parts[i] = pyRepr(x.Keys[i]) + ": " + pyRepr(x.Vals[i])
		}
		return "{" + strings.Join(parts, ", ") + "}"
	}
	return fmt.Sprint(v)
}
