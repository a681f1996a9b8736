package oduflow

import (
	"github.com/cockroachdb/errors"
)

// defaultClaimDir is where claims live unless WithClaimDir says otherwise.
const defaultClaimDir = "/var/cache/salt/oduflow-apply"

// outcomeUnknownError is how a ClaimStore marks a write whose acknowledgement was lost (it may have
// committed): some error in the chain has OutcomeUnknown() reporting true (etcdstore's writes do). The
// behaviour is matched rather than a sentinel so that this package needs no store's import.
type outcomeUnknownError interface{ OutcomeUnknown() bool }

func isOutcomeUnknown(err error) bool {
	var ou outcomeUnknownError
	return errors.As(err, &ou) && ou.OutcomeUnknown()
}

// unreadableClaim is how a ClaimStore names a claim its listing could not read (claims.ClaimStore): the
// file store's errors have the method. Matched by behaviour, as outcomeUnknownError.
type unreadableClaim interface{ UnreadableRequestID() string }
