package oduflow

import (
	"time"

	"github.com/oduflow/oduflow-go/receipt"
)

// Hooks receive metrics events; plug Prometheus or OpenTelemetry here without the library importing
// either. Implementations must be fast and goroutine-safe. Label values are bounded enumerations (profiles,
// statuses, error codes, function names), never identities.
type Hooks interface {
	// Started counts Start calls: created is true when this call created the claim.
	Started(profile receipt.Profile, created bool)
	// Published counts publications by function ("oduflow_job.run", "oduflow_job.status", ...) and result
	// ("ok", or an error code such as publish_outcome_unknown).
	Published(fun string, result string)
	// Outcome counts final outcomes committed by a worker or by reconciliation (code may be "").
	Outcome(profile receipt.Profile, status receipt.Status, code string)
	// Observe records durations: "start", "status", "dispatch_to_final", "publish", "poll", "proof".
	Observe(op string, d time.Duration)
	// UnverifiedEvent counts returns that are never evidence: forged or stray events on the master bus,
	// and answers whose receipt proof does not verify. reason is one of the Unverified* constants.
	UnverifiedEvent(reason string)
}

// Reasons passed to Hooks.UnverifiedEvent.
const (
	UnverifiedMinionEvent = "minion_event"  // data cmd is _minion_event: fired by some minion, not a return
	UnverifiedIDMismatch  = "id_mismatch"   // data id is not the minion of the tag
	UnverifiedWrongMinion = "wrong_minion"  // a return of the request's JID from another minion
	UnverifiedNotReceipt  = "not_receipt"   // not a protocol-1 receipt, or bound to another claim
	UnverifiedProof       = "proof_invalid" // an attest answer whose proof does not verify or binds elsewhere
	UnverifiedUnproven    = "unproven"      // a terminal-looking return the minion's signed answer does not confirm
)

// NopHooks discards everything; the default.
type NopHooks struct{}

func (NopHooks) Started(receipt.Profile, bool)                   {}
func (NopHooks) Published(string, string)                        {}
func (NopHooks) Outcome(receipt.Profile, receipt.Status, string) {}
func (NopHooks) Observe(string, time.Duration)                   {}
func (NopHooks) UnverifiedEvent(string)                          {}

var _ Hooks = NopHooks{}
