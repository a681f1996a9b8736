package oduflow

import (
	"sort"
	"time"

	"github.com/oduflow/oduflow-go/internal/errmark"

	"github.com/cockroachdb/errors"

	"github.com/oduflow/oduflow-go/oduflow/catalog"
	"github.com/oduflow/oduflow-go/oduflow/claims"
	"github.com/oduflow/oduflow-go/receipt"
)

// customMode is how a custom execution is requested: catalog.ModeApply or catalog.ModeApplyAgain.
type customMode = catalog.Mode

// NeedsConfirmationError is what CustomStart returns when the latest execution of the definition on the
// server failed and nothing confirms that failure yet; it matches ErrNeedsConfirmation (errors.Is) and
// names the execution (errors.As). Nothing was started for the new request.
type NeedsConfirmationError struct {
	// RequestID is the failed execution's request id (its claim's; catalog.Execution.RequestID).
	RequestID string
	// Dispatched: the attempt may have been published, so only the minion's receipt confirms it:
	// Reconcile(minion, RequestID, FromMinion{}) records it (CustomStart tried that once itself). When
	// false, the failure has no master record that confirms it either (an operator's assertion never
	// does): inspect the server before anything else.
	Dispatched bool
}

func (e *NeedsConfirmationError) Error() string {
	return "oduflow: failure of custom execution " + e.RequestID + " is not confirmed by a minion receipt"
}

// Unwrap makes errors.Is(err, ErrNeedsConfirmation) true.
func (e *NeedsConfirmationError) Unwrap() error { return ErrNeedsConfirmation }

// UncertainError is what CustomStart returns when a custom execution on the server has an unknown
// outcome: it blocks new custom executions there. It matches ErrUncertain (errors.Is) and names the
// execution (errors.As). Nothing was started for the new request; reconcile RequestID first (Reconcile
// FromMinion, or Assert after inspecting the server), never start a replacement.
type UncertainError struct {
	// RequestID is the uncertain execution's request id (its claim's; catalog.Execution.RequestID).
	RequestID string
}

func (e *UncertainError) Error() string {
	return "oduflow: custom execution " + e.RequestID + " has an unknown outcome; reconcile it first"
}

// Unwrap makes errors.Is(err, ErrUncertain) true.
func (e *UncertainError) Unwrap() error { return ErrUncertain }

// customRecord is one custom execution on the server, as the reuse rules see it.
type customRecord struct {
	RequestID    string
	DefinitionID string
	Digest       string
	// Status by the status contract. not_started means a frozen snapshot whose claim does not exist
	// (yet): a queued execution.
	Status       receipt.Status
	Confirmation catalog.Confirmation // what established a terminal status
	Dispatched   bool                 // the dispatch intent was recorded
	CreatedAt    time.Time
}

// customConfigRecord is one configure claim of the server (initial configuration evidence).
type customConfigRecord struct {
	Status       receipt.Status
	Confirmation catalog.Confirmation
	Legacy       bool // written by an earlier runner: no minion receipt can exist
}

// customRequest is the input of decideCustom.
type customRequest struct {
	Mode         customMode
	DefinitionID string
	Digest       string // digest of the definition's current compiled source
	// Configure lists the server's configure claims (any order).
	Configure []customConfigRecord
	// History lists every custom execution on the server, all definitions (any order: sorted by
	// CreatedAt, then request id).
	History []customRecord
}

// customDecisionKind is what decideCustom decided.
type customDecisionKind int

const (
	// customNew: freeze a new execution and start it.
	customNew customDecisionKind = iota + 1
	// customReuseRunning: return the queued or running execution of the definition; the new request id
	// points to it. It never waits for the lease and never becomes a preflight failure.
	customReuseRunning
	// customReuseSucceeded: the identical digest already succeeded on the server by minion receipt and is
	// the definition's latest result; return it without publishing; the new request id points to it.
	customReuseSucceeded
)

func (k customDecisionKind) String() string {
	switch k {
	case customNew:
		return "new"
	case customReuseRunning:
		return "reuse_running"
	case customReuseSucceeded:
		return "reuse_succeeded"
	}
	return "invalid"
}

// customDecision is the outcome of decideCustom. Execution is set for the two reuse kinds.
type customDecision struct {
	Kind      customDecisionKind
	Execution customRecord
}

// decideCustom applies the custom execution rules, in this order:
//
//  1. Reuse running: a queued (not_started) or running execution of the same definition on the server is
//     returned, whatever the mode and the digest (a later edit does not touch what is queued; a repeated
//     click of either button never starts a second run).
//  2. Uncertain: any custom execution on the server with status unknown refuses (ErrUncertain), also for
//     reuse of an old success: the unknown run may have changed the server since.
//  3. The definition's latest execution on the server (its latest terminal result, all digests) decides:
//     - apply_again without any: ErrApplyAgainWithoutTerminal;
//     - failed and not confirmed (not by a minion receipt, nor by the master's own record of an attempt that
//     published nothing): ErrNeedsConfirmation. An asserted failure is not a confirmation;
//     - apply, succeeded by minion receipt with the identical digest: reuse it. An asserted success, an older
//     success followed by another result, or another digest (the definition was edited) gives a new run.
//  4. New runs need the server's initial configuration: a configure claim succeeded by minion receipt, or a
//     legacy configure claim terminal succeeded (not asserted); otherwise ErrInitialConfigurationMissing.
//  5. New.
//
// It is pure: no I/O, no clock.
func decideCustom(req customRequest) (customDecision, error) {
	if !req.Mode.Valid() {
		return customDecision{}, errmark.Mark(errors.Newf("oduflow: invalid custom mode %q", errors.Safe(string(req.Mode))), claims.ErrInvalidInput)
	}
	if req.DefinitionID == "" || req.Digest == "" {
		return customDecision{}, errmark.Mark(errors.New("oduflow: custom decision without definition or digest"), claims.ErrInvalidInput)
	}
	hist := append([]customRecord(nil), req.History...)
	sort.SliceStable(hist, func(i, j int) bool {
		if !hist[i].CreatedAt.Equal(hist[j].CreatedAt) {
			return hist[i].CreatedAt.Before(hist[j].CreatedAt)
		}
		return hist[i].RequestID < hist[j].RequestID
	})
	for i := len(hist) - 1; i >= 0; i-- {
		r := hist[i]
		if r.DefinitionID == req.DefinitionID &&
			(r.Status == receipt.StatusNotStarted || r.Status == receipt.StatusRunning) {
			return customDecision{Kind: customReuseRunning, Execution: r}, nil
		}
	}
	for _, r := range hist {
		if !r.Status.Terminal() && r.Status != receipt.StatusNotStarted && r.Status != receipt.StatusRunning {
			// unknown, or anything this version does not know: never assume it finished.
			return customDecision{}, &UncertainError{RequestID: r.RequestID}
		}
	}
	var last *customRecord
	for i := len(hist) - 1; i >= 0; i-- {
		if hist[i].DefinitionID == req.DefinitionID && hist[i].Status.Terminal() {
			last = &hist[i]
			break
		}
	}
	if req.Mode == catalog.ModeApplyAgain && last == nil {
		return customDecision{}, ErrApplyAgainWithoutTerminal
	}
	if last != nil && last.Status == receipt.StatusFailed && !failureConfirmed(*last) {
		return customDecision{}, &NeedsConfirmationError{RequestID: last.RequestID, Dispatched: last.Dispatched}
	}
	if req.Mode == catalog.ModeApply && last != nil && last.Status == receipt.StatusSucceeded &&
		last.Confirmation == catalog.ConfirmedByMinionReceipt && last.Digest == req.Digest {
		return customDecision{Kind: customReuseSucceeded, Execution: *last}, nil
	}
	if !initialConfigured(req.Configure) {
		return customDecision{}, ErrInitialConfigurationMissing
	}
	return customDecision{Kind: customNew}, nil
}

// failureConfirmed: a minion receipt, or the master's own terminal record of an attempt that published
// nothing (a preflight failure, or a publish reply proving nothing was published).
func failureConfirmed(r customRecord) bool {
	switch r.Confirmation {
	case catalog.ConfirmedByMinionReceipt:
		return true
	case catalog.ConfirmedByMasterRecord:
		return true
	}
	return false
}

func initialConfigured(cs []customConfigRecord) bool {
	for _, c := range cs {
		if c.Status != receipt.StatusSucceeded || c.Confirmation == catalog.ConfirmedByOperatorAssertion {
			continue
		}
		if c.Confirmation == catalog.ConfirmedByMinionReceipt || c.Legacy {
			return true
		}
	}
	return false
}
