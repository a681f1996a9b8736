package receipt

import "github.com/cockroachdb/errors"

// Phase is the phase of one request in the minion's receipt directory. The
// master's claim phases (claimed, dispatching, dispatched, terminal, asserted)
// belong to the dispatcher, not to this type.
type Phase string

// Minion receipt phases. PhaseNone is the absence of any local record.
const (
	PhaseNone     Phase = ""
	PhaseClaimed  Phase = "claimed"  // JID index written, no running record yet
	PhaseRunning  Phase = "running"  // running record written; state work may be under way
	PhaseTerminal Phase = "terminal" // terminal receipt committed (succeeded or failed); immutable
	PhaseUnknown  Phase = "unknown"  // partial claim, or worker gone before the terminal commit
)

// Valid reports whether p is one of the phases (PhaseNone included).
func (p Phase) Valid() bool {
	switch p {
	case PhaseNone, PhaseClaimed, PhaseRunning, PhaseTerminal, PhaseUnknown:
		return true
	}
	return false
}

// transitionRule: allowed says whether from -> to is in the table; needsTrust
// says it is allowed only with a trustworthy receipt.
type transitionRule struct {
	allowed, needsTrust bool
}

// transitions is the table documented in doc.go; anything absent is illegal.
var transitions = map[[2]Phase]transitionRule{
	{PhaseNone, PhaseClaimed}:     {allowed: true},
	{PhaseClaimed, PhaseRunning}:  {allowed: true},
	{PhaseClaimed, PhaseUnknown}:  {allowed: true},
	{PhaseRunning, PhaseTerminal}: {allowed: true},
	{PhaseRunning, PhaseUnknown}:  {allowed: true},
	{PhaseUnknown, PhaseTerminal}: {allowed: true, needsTrust: true},
}

// CheckTransition reports whether a minion receipt record may move from one
// phase to another. trustworthy matters only for unknown -> terminal, which
// needs the request's exact, validated, bound terminal receipt. Everything
// not in the table (doc.go) is a *TransitionError (errors.Is
// ErrIllegalTransition): in particular nothing leaves terminal, nothing goes
// back to claimed or running (that would be a second execution), and
// claimed -> terminal skips the running record that must precede state work.
func CheckTransition(from, to Phase, trustworthy bool) error {
	rule := transitions[[2]Phase{from, to}]
	if !from.Valid() || !to.Valid() || !rule.allowed || (rule.needsTrust && !trustworthy) {
		return errors.WithStack(&TransitionError{From: from, To: to, Trustworthy: trustworthy})
	}
	return nil
}
