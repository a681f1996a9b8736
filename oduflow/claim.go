package oduflow

import "github.com/oduflow/oduflow-go/oduflow/claims"

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
