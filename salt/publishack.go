package salt

import (
	"fmt"

	"github.com/cockroachdb/errors"
	"github.com/cockroachdb/redact"
)

// replyMismatchError is a publish acknowledgement that does not match the request: the JID
// differs from the preassigned one, or the minions of a list target are not exactly the target.
// Something was published, perhaps not what was asked (a confused or hostile master, a reply
// meant for another request): the outcome is unknown (Is(ErrOutcomeUnknown)), never "dispatched".
type replyMismatchError struct {
	Field string // "jid" or "minions"
	Want  string // the request's value (JID, or the target ids)
	Got   string // the reply's value
}

func (e *replyMismatchError) Error() string {
	return fmt.Sprintf("salt: publish reply %s mismatch: want %s, got %s", e.Field, e.Want, e.Got)
}

// SafeFormatError keeps the field name visible and the master-chosen values redactable.
func (e *replyMismatchError) SafeFormatError(p errors.Printer) error {
	p.Printf("salt: publish reply %s mismatch: want %s, got %s", redact.Safe(e.Field), e.Want, e.Got)
	return nil
}

// Is reports ErrOutcomeUnknown.
func (e *replyMismatchError) Is(target error) bool { return target == ErrOutcomeUnknown }

// checkPublishAck checks a successful publish reply against the request. Refusals (no minions,
// errors) were sorted out before: they prove nothing was published whatever they say.
func checkPublishAck(req PublishRequest, res *PublishResult) error {
	if req.JID != "" && res.JID != req.JID {
		return errors.WithStack(&replyMismatchError{Field: "jid", Want: string(req.JID), Got: string(res.JID)})
	}
	if req.Target.Type != targetList {
		return nil
	}
	// Salt's list matcher answers minions = the target ids with an accepted key and missing =
	// the others, each in target order (a repeated id repeated): together exactly the target.
	want := make(map[string]int, len(req.Target.List))
	for _, id := range req.Target.List {
		want[id]++
	}
	ok := len(res.Minions)+len(res.Missing) == len(req.Target.List)
	for _, ids := range [][]string{res.Minions, res.Missing} {
		for _, id := range ids {
			if want[id] == 0 {
				ok = false
			}
			want[id]--
		}
	}
	if !ok {
		return errors.WithStack(&replyMismatchError{Field: "minions", Want: fmt.Sprint(req.Target.List),
			Got: fmt.Sprintf("minions %v missing %v", res.Minions, res.Missing)})
	}
	return nil
}
