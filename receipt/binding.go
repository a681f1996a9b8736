package receipt

import (
	"github.com/cockroachdb/errors"

	"github.com/oduflow/oduflow-go/internal/errmark"
)

// Binding is the immutable identity of one claim: a receipt is accepted for
// the claim only when all five fields match exactly.
type Binding struct {
	MinionID    string
	RequestID   string
	JID         string
	Profile     Profile
	StateDigest string
}

// Binding returns the binding the receipt claims to belong to.
func (r Receipt) Binding() Binding {
	return Binding{MinionID: r.MinionID, RequestID: r.RequestID, JID: r.JID, Profile: r.Profile, StateDigest: r.StateDigest}
}

// Check validates r and then compares it field by field with b, in the order
// minion_id, request_id, jid, profile, state_digest. The first difference is
// an *InvalidReceiptError with Reason "binding" and the first differing Field (errors.Is ErrInvalidReceipt). An invalid receipt returns
// its *InvalidReceiptError instead.
//
// One exception: a custom not_started, unknown or fenced answer with an empty
// state_digest (the minion has no evidence of the payload, see Receipt)
// matches any digest; such an answer carries no result, so it cannot
// confirm anything about which payload ran (a fenced one says none ran).
func (b Binding) Check(r Receipt) (err error) {
	defer errmark.Boundary(&err)
	if err := r.Validate(); err != nil {
		return err
	}
	field := ""
	switch {
	case r.MinionID != b.MinionID:
		field = "minion_id"
	case r.RequestID != b.RequestID:
		field = "request_id"
	case r.JID != b.JID:
		field = "jid"
	case r.Profile != b.Profile:
		field = "profile"
	case r.StateDigest != b.StateDigest:
		evidenceFree := r.StateDigest == "" && (r.Status == StatusNotStarted || r.Status == StatusUnknown || r.Fenced())
		if !evidenceFree {
			field = "state_digest"
		}
	}
	if field != "" {
		return errors.WithStack(&InvalidReceiptError{Reason: reasonBinding, Field: field})
	}
	return nil
}
