package oduflow

import "github.com/oduflow/oduflow-go/oduflow/claims"

// The claim record is package claims' (oduflow/claims): these names are the same types and values, so
// code written against package oduflow keeps compiling and compares with either.

// Claim is the durable master record of one request (claims.Claim): identities, the fixed role, the
// preassigned JID, the phase, timestamps and the sanitized outcome; nothing raw from Salt.
type Claim = claims.Claim

// Phase is the master-side phase of a claim (claims.Phase).
type Phase = claims.Phase

// Claim phases. claimed -> dispatching -> dispatched -> terminal; asserted is terminal and reachable only
// from unknown through an operator's Reconcile.
const (
	PhaseClaimed     = claims.PhaseClaimed
	PhaseDispatching = claims.PhaseDispatching
	PhaseDispatched  = claims.PhaseDispatched
	PhaseTerminal    = claims.PhaseTerminal
	PhaseAsserted    = claims.PhaseAsserted
)

// MaxFenceToken is the largest fencing token (2^53-1: exact in JSON and in a msgpack double, as the
// minion module requires; claims.MaxFenceToken).
const MaxFenceToken = claims.MaxFenceToken

// claimProtocol is the claim format the dispatcher writes. Claims without a protocol field are legacy.
const claimProtocol = claims.Protocol

// Reconciliation kinds recorded with a final claim.
const (
	evidenceReceipt    = "receipt"    // a minion receipt bound to the claim (return or status poll)
	evidencePreflight  = "preflight"  // the master's own preflight failure; nothing published
	evidenceRefused    = "refused"    // the publish reply proved nothing was published
	evidenceNone       = "none"       // unknown: no trustworthy evidence
	evidenceAsserted   = "asserted"   // an operator's assertion (never a minion receipt)
	evidenceReconciled = "reconciled" // a minion receipt fetched by an operator's Reconcile
	evidenceFenced     = "fenced"     // the minion's signed fenced receipt: the publication never ran
)
