package receipt

import "github.com/cockroachdb/errors"

// phase is the phase of one request in the minion's receipt directory. The
// master's claim phases (claimed, dispatching, dispatched, terminal, asserted)
// belong to the dispatcher, not to this type.
type phase string

// Minion receipt phases. phaseNone is the absence of any local record.
const (
	phaseNone     phase = ""
	phaseClaimed  phase = "claimed"  // JID index written, no running record yet
	phaseRunning  phase = "running"  // running record written; state work may be under way
	phaseTerminal phase = "terminal" // terminal receipt committed (succeeded or failed); immutable
	phaseUnknown  phase = "unknown"  // partial claim, or worker gone before the terminal commit
)

// Valid reports whether p is one of the phases (phaseNone included).
func (p phase) Valid() bool {
	switch p {
	case phaseNone, phaseClaimed, phaseRunning, phaseTerminal, phaseUnknown:
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
var transitions = map[[2]phase]transitionRule{
	{phaseNone, phaseClaimed}:     {allowed: true},
	{phaseClaimed, phaseRunning}:  {allowed: true},
	{phaseClaimed, phaseUnknown}:  {allowed: true},
	{phaseRunning, phaseTerminal}: {allowed: true},
	{phaseRunning, phaseUnknown}:  {allowed: true},
	{phaseUnknown, phaseTerminal}: {allowed: true, needsTrust: true},
}

// checkTransition reports whether a minion receipt record may move from one
// phase to another. trustworthy matters only for unknown -> terminal, which
// needs the request's exact, validated, bound terminal receipt. Everything
// not in the table (doc.go) is a *transitionError (errors.Is
// errIllegalTransition): in particular nothing leaves terminal, nothing goes
// back to claimed or running (that would be a second execution), and
// claimed -> terminal skips the running record that must precede state work.
func checkTransition(from, to phase, trustworthy bool) error {
	rule := transitions[[2]phase{from, to}]
	if !from.Valid() || !to.Valid() || !rule.allowed || (rule.needsTrust && !trustworthy) {
		return errors.WithStack(&transitionError{From: from, To: to, Trustworthy: trustworthy})
	}
	return nil
}
