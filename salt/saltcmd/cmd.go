package saltcmd

import (
	"net"
	"regexp"
	"strings"
	"time"

	"github.com/oduflow/oduflow-go/salt"
)

// Cmd is one execution-module call, as `salt TARGET FUN ARG... KEY=VALUE...` sends it.
type Cmd struct {
	// Target selects the minions; every type Salt's CLI accepts is validated before sending
	// (see ValidateTarget).
	Target salt.Target
	// Fun is the execution-module function, e.g. "test.ping" or "cmd.run".
	Fun string
	// Args are the positional arguments. A string "name=value" is a keyword argument on the
	// minion, as on Salt's command line.
	Args []any
	// Kwargs are keyword arguments, sent as Salt's CLI sends them: one trailing
	// {"__kwarg__": true, ...} map in arg.
	Kwargs map[string]any
	// Returner is Salt's --return ("ret"): returners the minions also send their return to.
	Returner string
	// Timeout is Salt's timeout: how long to wait for returns before asking the remaining
	// minions with saltutil.find_job whether they still run the job (default 5 s, whole
	// seconds on the wire). The run itself ends when every minion is accounted for, or when
	// the context is done.
	Timeout time.Duration
	// GatherJobTimeout is Salt's gather_job_timeout: how long to wait for the answers to one
	// saltutil.find_job round (default 10 s); a minion running the job is asked again every
	// GatherJobTimeout, and a minion that does not answer a round is "no response".
	GatherJobTimeout time.Duration
	// Metadata is echoed by the minions in every return (kwargs.metadata).
	Metadata map[string]any
}

const (
	defaultTimeout          = 5 * time.Second
	defaultGatherJobTimeout = 10 * time.Second
)

func (c Cmd) timeout() time.Duration {
	if c.Timeout <= 0 {
		return defaultTimeout
	}
	return c.Timeout
}

func (c Cmd) gatherJobTimeout() time.Duration {
	if c.GatherJobTimeout <= 0 {
		return defaultGatherJobTimeout
	}
	return c.GatherJobTimeout
}

// wireSeconds is Salt's integer "timeout" field.
func wireSeconds(d time.Duration) int {
	s := int((d + time.Second - 1) / time.Second)
	if s < 1 {
		s = 1
	}
	return s
}

// GuardedPrefix is the function prefix the general client refuses: oduflow_job.* writes and
// reads the dispatcher's receipts and must only be published by the dispatcher (package
// oduflow), which claims each job before it publishes it.
const GuardedPrefix = "oduflow_job."

var funRe = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)+$`)

func (c Cmd) validate() error {
	if !funRe.MatchString(c.Fun) {
		return refuse(ErrInvalidCommand, "function %q is not module.function", c.Fun)
	}
	if strings.HasPrefix(c.Fun, GuardedPrefix) {
		return refuse(ErrGuardedFunction, "%s is published only by the oduflow dispatcher", c.Fun)
	}
	if c.Timeout < 0 || c.GatherJobTimeout < 0 {
		return refuse(ErrInvalidCommand, "negative timeout")
	}
	if _, ok := c.Kwargs["__kwarg__"]; ok {
		return refuse(ErrInvalidCommand, "kwargs may not contain __kwarg__")
	}
	return ValidateTarget(c.Target)
}

func (c Cmd) publishRequest(t salt.Target, fun string, args []any, jid salt.JID) salt.PublishRequest {
	return salt.PublishRequest{Target: t, Fun: fun, Args: args, Kwargs: c.Kwargs, JID: jid,
		Timeout: wireSeconds(c.timeout()), Metadata: c.Metadata, Returner: c.Returner}
}

// Target types (Salt's tgt_type) accepted by ValidateTarget.
const (
	glob       = "glob"
	list       = "list"
	grain      = "grain"
	grainPCRE  = "grain_pcre"
	pillar     = "pillar"
	pillarPCRE = "pillar_pcre"
	pcre       = "pcre"
	compound   = "compound"
	nodegroup  = "nodegroup"
	ipcidr     = "ipcidr"
)

var (
	nodegroupRe = regexp.MustCompile(`^[A-Za-z0-9_.-]+$`)
	// compoundWord: a matcher prefix (G@, E@, P@, L@, I@, J@, S@, N@, R@) or a bare glob word.
	compoundPrefixRe = regexp.MustCompile(`^([A-Z])@`)
)

const compoundPrefixes = "GEPLIJSNR"

// ValidateTarget checks a target the way the master would parse it, so that a typo is refused
// here (ErrInvalidTarget) instead of matching no minion or the wrong ones: the type must be one
// of glob, list, grain, grain_pcre, pillar, pillar_pcre, pcre, compound, nodegroup, ipcidr; a
// list has non-empty ids without commas or spaces; grain and pillar expressions are
// "key:value"; a compound expression has balanced parentheses and known matcher prefixes; a
// nodegroup is a name; ipcidr is an address or a CIDR network.
func ValidateTarget(t salt.Target) error {
	if t.Type == list {
		if len(t.List) == 0 {
			return refuse(ErrInvalidTarget, "list target without ids")
		}
		for _, id := range t.List {
			if id == "" || strings.ContainsAny(id, ", \t\n") {
				return refuse(ErrInvalidTarget, "bad minion id %q in list target", id)
			}
		}
		return nil
	}
	e := t.Expr
	if strings.TrimSpace(e) == "" {
		return refuse(ErrInvalidTarget, "empty %s expression", t.Type)
	}
	switch t.Type {
	case glob, pcre:
		if strings.ContainsAny(e, " \t\n") {
			return refuse(ErrInvalidTarget, "%s expression %q contains whitespace (use compound)", t.Type, e)
		}
	case grain, grainPCRE, pillar, pillarPCRE:
		if i := strings.Index(e, ":"); i <= 0 || i == len(e)-1 {
			return refuse(ErrInvalidTarget, "%s expression %q is not key:value", t.Type, e)
		}
	case nodegroup:
		if !nodegroupRe.MatchString(e) {
			return refuse(ErrInvalidTarget, "nodegroup %q is not a name", e)
		}
	case ipcidr:
		if _, _, err := net.ParseCIDR(e); err != nil && net.ParseIP(e) == nil {
			return refuse(ErrInvalidTarget, "ipcidr %q is neither an address nor a network", e)
		}
	case compound:
		return validateCompound(e)
	case "":
		return refuse(ErrInvalidTarget, "target type is required")
	default:
		return refuse(ErrInvalidTarget, "unknown target type %q", t.Type)
	}
	return nil
}

func validateCompound(e string) error {
	depth, words, wantOperand := 0, 0, true
	for _, w := range strings.Fields(strings.NewReplacer("(", " ( ", ")", " ) ").Replace(e)) {
		switch {
		case w == "(":
			if !wantOperand {
				return refuse(ErrInvalidTarget, "compound %q: '(' after an operand", e)
			}
			depth++
		case w == ")":
			if wantOperand {
				return refuse(ErrInvalidTarget, "compound %q: ')' where an operand is expected", e)
			}
			depth--
			if depth < 0 {
				return refuse(ErrInvalidTarget, "compound %q: unbalanced ')'", e)
			}
		case w == "and" || w == "or":
			if wantOperand {
				return refuse(ErrInvalidTarget, "compound %q: %q without a left operand", e, w)
			}
			wantOperand = true
		case w == "not":
			if !wantOperand {
				return refuse(ErrInvalidTarget, "compound %q: 'not' after an operand", e)
			}
		default:
			if !wantOperand {
				return refuse(ErrInvalidTarget, "compound %q: two operands without and/or", e)
			}
			if m := compoundPrefixRe.FindStringSubmatch(w); m != nil {
				if !strings.Contains(compoundPrefixes, m[1]) {
					return refuse(ErrInvalidTarget, "compound %q: unknown matcher %s@", e, m[1])
				}
				if len(w) == 2 {
					return refuse(ErrInvalidTarget, "compound %q: empty %s@ expression", e, m[1])
				}
			}
			words++
			wantOperand = false
		}
	}
	if depth != 0 {
		return refuse(ErrInvalidTarget, "compound %q: unbalanced '('", e)
	}
	if wantOperand || words == 0 {
		return refuse(ErrInvalidTarget, "compound %q ends without an operand", e)
	}
	return nil
}
