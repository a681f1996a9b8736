package catalog

import (
	"time"

	"github.com/oduflow/oduflow-go/receipt"
)

// Mode is how an execution was requested.
type Mode string

const (
	// ModeApply: Apply. Repeated clicks reuse the current execution or an identical succeeded one.
	ModeApply Mode = "apply"
	// ModeApplyAgain: Apply Again, an explicit new execution after a known terminal result.
	ModeApplyAgain Mode = "apply_again"
)

// Valid reports whether m is one of the two modes.
func (m Mode) Valid() bool { return m == ModeApply || m == ModeApplyAgain }

// Confirmation says what established an execution's terminal outcome.
type Confirmation string

const (
	// confirmedNone: no terminal evidence (queued, running, or unknown).
	confirmedNone Confirmation = ""
	// ConfirmedByMinionReceipt: the minion's protocol 1 receipt bound to the claim (a return, a status
	// poll, or an operator's Reconcile that fetched the receipt).
	ConfirmedByMinionReceipt Confirmation = "minion_receipt"
	// ConfirmedByMasterRecord: the master's own terminal record of an attempt that published nothing (a
	// preflight failure, or a publish reply proving nothing was published).
	ConfirmedByMasterRecord Confirmation = "master_record"
	// ConfirmedByOperatorAssertion: an outcome an operator established and asserted. It never counts as a
	// minion receipt: not for digest reuse, not as a confirmed failure.
	ConfirmedByOperatorAssertion Confirmation = "operator_assertion"
)

// Valid reports whether c is one of the known confirmations.
func (c Confirmation) Valid() bool {
	switch c {
	case confirmedNone, ConfirmedByMinionReceipt, ConfirmedByMasterRecord, ConfirmedByOperatorAssertion:
		return true
	}
	return false
}

// Definition is a revisioned custom state source.
type Definition struct {
	ID        string    `json:"id"`
	Company   string    `json:"company"`
	Name      string    `json:"name"`
	Source    []byte    `json:"source"`
	Revision  int       `json:"revision"`
	Digest    string    `json:"digest"` // digest of the compiled current source
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// Assignment assigns a definition to one server.
type Assignment struct {
	DefinitionID string    `json:"definition_id"`
	MinionID     string    `json:"minion_id"`
	Company      string    `json:"company"` // the server's company
	CreatedAt    time.Time `json:"created_at"`
}

// Pointer is a request id recorded as pointing to an existing execution instead of creating one.
type Pointer struct {
	RequestID string    `json:"request_id"`
	Reason    string    `json:"reason"` // "reuse_running" or "reuse_succeeded": why the request id was attached
	CreatedAt time.Time `json:"created_at"`
}

// Pointer reasons.
const (
	reasonReuseRunning   = "reuse_running"
	reasonReuseSucceeded = "reuse_succeeded"
)

// Outcome is the sanitized result of an execution: counts and codes, never raw Salt output.
type Outcome struct {
	Status      receipt.Status `json:"status"`
	Passed      int            `json:"passed"`
	Total       int            `json:"total"`
	ErrorCode   string         `json:"error_code,omitempty"`
	ConfirmedBy Confirmation   `json:"confirmed_by,omitempty"`
	Dispatched  bool           `json:"dispatched"` // the dispatch intent was recorded (publish may have gone out)
	UpdatedAt   time.Time      `json:"updated_at"`
}

// Execution is the immutable snapshot of one applied definition (plus its appended pointers and outcome).
type Execution struct {
	RequestID    string    `json:"request_id"` // execution id
	Company      string    `json:"company"`
	DefinitionID string    `json:"definition_id"`
	Revision     int       `json:"revision"`
	Source       []byte    `json:"source"`
	Canonical    []byte    `json:"canonical"` // canonical JSON of the high data (RFC 8785)
	Digest       string    `json:"digest"`    // hex SHA-256 of Canonical
	MinionID     string    `json:"minion_id"`
	Mode         Mode      `json:"mode"`
	CreatedAt    time.Time `json:"created_at"`
	Pointers     []Pointer `json:"pointers,omitempty"`
	Outcome      Outcome   `json:"outcome"`
}

// Compiled is what Compile returns for a source: the canonical JSON of its high data and the hex
// SHA-256 digest of that canonical JSON.
type Compiled struct {
	Canonical []byte
	Digest    string
}

func cloneBytes(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append([]byte(nil), b...)
}

func (e Execution) clone() Execution {
	e.Source = cloneBytes(e.Source)
	e.Canonical = cloneBytes(e.Canonical)
	e.Pointers = append([]Pointer(nil), e.Pointers...)
	return e
}

func (d Definition) clone() Definition {
	d.Source = cloneBytes(d.Source)
	return d
}
