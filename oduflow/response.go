package oduflow

import (
	"github.com/oduflow/oduflow-go/receipt"
)

// Response is the answer of every Start/Status (and Reconcile/Resume): the response contract of the package doc.
type Response struct {
	MinionID  string         `json:"minion_id"`
	RequestID string         `json:"request_id"`
	JID       *string        `json:"jid"` // nil for not_started
	Status    receipt.Status `json:"status"`
	Passed    int            `json:"passed"`
	Total     int            `json:"total"`
}

// Readiness is the typed result of Ping.
type Readiness struct {
	// KeyAccepted: the master matched the exact minion id (its key is accepted).
	KeyAccepted bool `json:"key_accepted"`
	// Reachable: the minion answered test.ping.
	Reachable bool `json:"reachable"`
	// Protocol reported by oduflow_job.capabilities (0 when unknown or absent).
	Protocol int `json:"protocol"`
	// PillarReady: the minion reports its full pillar ready.
	PillarReady bool `json:"pillar_ready"`
	// Proof: the minion advertises receipt proofs (rsa-pkcs1v15-sha256) and the master's pki dir holds
	// its accepted key, so its receipts can be verified.
	Proof bool `json:"proof"`
}

// Ready reports whether a new request can be dispatched to the minion.
func (r Readiness) Ready() bool {
	return r.KeyAccepted && r.Reachable && r.Protocol == protocolVersion && r.PillarReady && r.Proof
}

// protocolVersion is the minion protocol this dispatcher requires.
const protocolVersion = 1

func notStarted(minion, request string) Response {
	return Response{MinionID: minion, RequestID: request, Status: receipt.StatusNotStarted}
}
