package oduflow

import (
	"context"
	"log/slog"

	"github.com/cockroachdb/errors"

	"github.com/oduflow/oduflow-go/internal/errmark"
	"github.com/oduflow/oduflow-go/oduflow/catalog"
	"github.com/oduflow/oduflow-go/oduflow/claims"
	"github.com/oduflow/oduflow-go/receipt"
)

// CustomResponse is the answer of CustomStart and CustomStatus: the target, the request, the execution it
// resolved to (the request itself unless a running or succeeded execution was reused), the job identity,
// the status and counts. Nothing else: no source, no payload, no Salt output.
type CustomResponse struct {
	MinionID    string         `json:"minion_id"`
	RequestID   string         `json:"request_id"`
	ExecutionID string         `json:"execution_id"`
	JID         *string        `json:"jid"` // nil while not_started
	Status      receipt.Status `json:"status"`
	Passed      int            `json:"passed"`
	Total       int            `json:"total"`
	// ErrorCode is the execution's sanitized error code, "" when none (Response.ErrorCode).
	ErrorCode claims.ErrorCode `json:"error_code"`
	// Reused is "", "reuse_running" (reuseRunning) or "reuse_succeeded" (reuseSucceeded).
	Reused string `json:"reused,omitempty"`
}

// Why a request id was attached to an existing execution (CustomResponse.Reused); the catalog
// records the same word on the pointer.
const (
	reuseRunning   = "reuse_running"
	reuseSucceeded = "reuse_succeeded"
)

// CustomStart applies (mode catalog.ModeApply) or applies again (catalog.ModeApplyAgain) the definition
// on the server under the caller's request id. Repeating a call with the same request id returns
// its current status and never publishes again. Refusals: ErrNotAssigned, ErrUncertain,
// ErrNeedsConfirmation, ErrApplyAgainWithoutTerminal, ErrInitialConfigurationMissing (errors.Is),
// catalog.ErrNotFound for an unknown definition, ErrMismatch for a request id bound elsewhere
// (another minion or definition). The Dispatcher needs WithCustomCatalog (else ErrNotReady).
//
// A new execution freezes the assigned definition's current source, revision, canonical payload, digest,
// server and request id into an immutable catalog snapshot, binds the digest to a custom claim, and starts
// the worker, which shares the per-client execution lease and the quarantine with every other profile and
// publishes, once, oduflow_job.run(request_id, "custom", state_data_json) with state_data_json =
// {"digest":"<sha256 hex>","high":<high data>} (canonical JSON; the minion module recomputes the digest and
// refuses a mismatch, then runs state.high of exactly that payload). Later edits of the definition change
// nothing already frozen. The reuse and confirmation rules are decideCustom's; a reused execution records
// the new request id as pointing to it and is returned at once (it never waits for the lease and never
// becomes a preflight failure). When the rules refuse only because a dispatched failure lacks its minion
// receipt (an operator asserted it), CustomStart calls Reconcile FromMinion once (oduflow_job.status; the
// master's claim gets the minion's receipt, the assertion kept for audit) and decides again.
//
// Keep secrets out of custom sources. Definitions, execution snapshots and the master's private records
// persist the source or payload; and Salt itself keeps every published load, the custom payload included
// (and the eauth credentials when eauth is used to publish), in the master's job directory even with
// job_cache: False, and fires it on the event bus as salt/job/<jid>/new. The library's own journal and
// status API keep only identities, digest, status, counts and error codes.
func (d *Dispatcher) CustomStart(ctx context.Context, minion, request, definitionID string, mode catalog.Mode) (_ CustomResponse, err error) {
	defer errmark.Boundary(&err)
	if _, err := d.parseTarget(minion, request); err != nil {
		return CustomResponse{}, err
	}
	if err := receipt.ValidateRequestID(definitionID); err != nil {
		return CustomResponse{}, invalid(err, "definition id")
	}
	if !mode.Valid() {
		return CustomResponse{}, errmark.Mark(errors.Newf("oduflow: invalid custom mode %q", errors.Safe(string(mode))), claims.ErrInvalidInput)
	}
	cat, err := d.customCatalog()
	if err != nil {
		return CustomResponse{}, err
	}
	unlock, err := cat.LockServer(ctx, minion)
	if err != nil {
		return CustomResponse{}, err
	}
	defer func() { _ = unlock() }()

	// A request id already used: its current status, never a second run.
	if e, ptr, err := cat.Resolve(ctx, request); err == nil {
		if e.MinionID != minion {
			return CustomResponse{}, &mismatchError{Field: "minion_id", Bound: e.MinionID}
		}
		if e.DefinitionID != definitionID {
			return CustomResponse{}, errors.Wrapf(errDefinitionMismatch, "oduflow: bound to definition %s",
				errors.Safe(e.DefinitionID))
		}
		reason := ""
		if ptr {
			reason = pointerReason(e, request)
		}
		return d.customDrive(ctx, cat, e, request, reason)
	} else if !errors.Is(err, catalog.ErrNotFound) {
		return CustomResponse{}, err
	}
	if c, err := d.store.Get(ctx, request); err == nil {
		if err := checkBinding(c, receipt.ProfileCustom, minion); err != nil {
			return CustomResponse{}, err
		}
		return CustomResponse{}, errors.Wrap(claims.ErrCorruptClaim, "oduflow: custom claim without its snapshot")
	} else if !errors.Is(err, claims.ErrNoClaim) {
		return CustomResponse{}, err
	}

	def, err := cat.Definition(ctx, definitionID)
	if err != nil {
		return CustomResponse{}, err
	}
	asg, err := cat.Assignment(ctx, definitionID, minion)
	if errors.Is(err, catalog.ErrNotFound) {
		return CustomResponse{}, errors.Wrap(ErrNotAssigned, "oduflow: custom start")
	} else if err != nil {
		return CustomResponse{}, err
	}
	// Checked again here, whatever the catalog implementation: one company's source never runs as
	// another company's execution (a crossed record is catalog.ErrCorrupt).
	if err := asg.CheckDefinition(def); err != nil {
		return CustomResponse{}, err
	}
	compiled, err := catalog.Compile(def.Source) // the digest bound now is the one frozen below
	if err != nil {
		return CustomResponse{}, errmark.Mark(errors.Wrap(err, "oduflow: custom source"), claims.ErrInvalidInput)
	}
	dec, err := d.customDecisionFor(ctx, cat, minion, definitionID, compiled.Digest, mode)
	if err != nil {
		return CustomResponse{}, err
	}
	lg := d.log.With(slog.String("request_id", request), slog.String("minion_id", minion),
		slog.String("definition_id", definitionID), slog.String("decision", dec.Kind.String()))
	switch dec.Kind {
	case customReuseRunning, customReuseSucceeded:
		reason := reuseRunning
		if dec.Kind == customReuseSucceeded {
			reason = reuseSucceeded
		}
		e, err := cat.AddPointer(ctx, dec.Execution.RequestID, request, reason)
		if err != nil {
			return CustomResponse{}, err
		}
		lg.Info("custom apply reuses an execution", slog.String("execution_id", e.RequestID))
		return d.customDrive(ctx, cat, e, request, reason)
	}
	if err := d.ready(ctx); err != nil {
		return CustomResponse{}, err // nothing frozen, no claim: the request id can be started once fixed
	}
	e, err := cat.CreateExecution(ctx, catalog.Execution{RequestID: request, Company: asg.Company,
		DefinitionID: def.ID, Revision: def.Revision, Source: def.Source, Canonical: compiled.Canonical,
		Digest: compiled.Digest, MinionID: minion, Mode: mode, CreatedAt: d.clock.Now()})
	if err != nil {
		return CustomResponse{}, err
	}
	lg.Info("custom execution frozen", slog.Int("revision", e.Revision), slog.String("digest", e.Digest))
	return d.customDrive(ctx, cat, e, request, "")
}

func pointerReason(e catalog.Execution, request string) string {
	for _, p := range e.Pointers {
		if p.RequestID == request {
			return p.Reason
		}
	}
	return reuseRunning
}

// customDrive makes sure the execution has its claim (creating it, and so starting the worker, when the
// snapshot exists without one: a queued execution or a crash between the two writes), and answers for
// request.
func (d *Dispatcher) customDrive(ctx context.Context, cat catalog.Store, e catalog.Execution, request, reason string) (CustomResponse, error) {
	c, err := d.store.Get(ctx, e.RequestID)
	var launchErr error // a detached worker that could not start: the claim is failed, nothing published
	if errors.Is(err, claims.ErrNoClaim) {
		if err := d.ready(ctx); err != nil {
			return CustomResponse{}, err // the snapshot stays queued; no claim written
		}
		c = &claims.Claim{Protocol: claimProtocol, MinionID: e.MinionID, RequestID: e.RequestID,
			Profile: receipt.ProfileCustom, StateDigest: e.Digest, PayloadRef: e.RequestID,
			JID: string(d.jids.Next()), Phase: claims.PhaseClaimed, CreatedAt: d.clock.Now()}
		if _, err := d.create(ctx, c); errors.Is(err, ErrWorkerLaunch) {
			launchErr = err
		} else if err != nil {
			return CustomResponse{}, err
		}
		if c, err = d.store.Get(ctx, e.RequestID); err != nil {
			return CustomResponse{}, err
		}
	} else if err != nil {
		return CustomResponse{}, err
	}
	if err := checkBinding(c, receipt.ProfileCustom, e.MinionID); err != nil {
		return CustomResponse{}, err
	}
	if c.StateDigest != e.Digest || c.PayloadRef != e.RequestID {
		return CustomResponse{}, errors.Wrap(claims.ErrCorruptClaim, "oduflow: custom claim does not match its snapshot")
	}
	out, err := d.customRespond(ctx, cat, e, c, request, reason)
	if err == nil && launchErr != nil {
		return out, launchErr
	}
	return out, err
}

// customRespond computes the claim's status, mirrors the sanitized outcome into the catalog and answers.
func (d *Dispatcher) customRespond(ctx context.Context, cat catalog.Store, e catalog.Execution, c *claims.Claim,
	request, reason string) (CustomResponse, error) {
	c, st, err := d.computeStatus(ctx, c)
	if err != nil {
		return CustomResponse{}, err
	}
	r := responseFor(c, st)
	out := CustomResponse{MinionID: r.MinionID, RequestID: request, ExecutionID: e.RequestID, JID: r.JID,
		Status: r.Status, Passed: r.Passed, Total: r.Total, ErrorCode: r.ErrorCode, Reused: reason}
	o := outcomeOf(c, st)
	if e.Outcome.ConfirmedBy == catalog.ConfirmedByMinionReceipt && claimConfirmation(c) == catalog.ConfirmedByOperatorAssertion {
		// The catalog holds the minion's receipt read after an assertion: the stronger evidence.
		o = e.Outcome
		out.Status, out.Passed, out.Total, out.ErrorCode = o.Status, o.Passed, o.Total, claims.ErrorCode(o.ErrorCode)
	}
	d.mirror(ctx, cat, e, o)
	return out, nil
}

// mirror records the sanitized outcome in the catalog when it changed. Failures are logged: the claim
// store stays authoritative and the next status call mirrors again.
func (d *Dispatcher) mirror(ctx context.Context, cat catalog.Store, e catalog.Execution, o catalog.Outcome) {
	cur := e.Outcome
	if cur.Status == o.Status && cur.Passed == o.Passed && cur.Total == o.Total && cur.ErrorCode == o.ErrorCode &&
		cur.ConfirmedBy == o.ConfirmedBy && cur.Dispatched == o.Dispatched {
		return
	}
	if _, err := cat.RecordOutcome(ctx, e.RequestID, o); err != nil {
		d.log.Warn("custom: outcome not mirrored", slog.String("request_id", e.RequestID),
			slog.String("error", err.Error()))
	}
}

// CustomStatus reports a custom request: its own execution, or the one it points to. A request id never
// used is not_started. Only target, request, job identity, status and counts are exposed.
func (d *Dispatcher) CustomStatus(ctx context.Context, minion, request string) (_ CustomResponse, err error) {
	defer errmark.Boundary(&err)
	if _, err := d.parseTarget(minion, request); err != nil {
		return CustomResponse{}, err
	}
	cat, err := d.customCatalog()
	if err != nil {
		return CustomResponse{}, err
	}
	e, ptr, err := cat.Resolve(ctx, request)
	if errors.Is(err, catalog.ErrNotFound) {
		if c, gerr := d.store.Get(ctx, request); gerr == nil {
			if err := checkBinding(c, receipt.ProfileCustom, minion); err != nil {
				return CustomResponse{}, err
			}
			return CustomResponse{}, errors.Wrap(claims.ErrCorruptClaim, "oduflow: custom claim without its snapshot")
		}
		return CustomResponse{MinionID: minion, RequestID: request, ExecutionID: request,
			Status: receipt.StatusNotStarted}, nil
	} else if err != nil {
		return CustomResponse{}, err
	}
	if e.MinionID != minion {
		return CustomResponse{}, &mismatchError{Field: "minion_id", Bound: e.MinionID}
	}
	reason := ""
	if ptr {
		reason = pointerReason(e, request)
	}
	c, err := d.store.Get(ctx, e.RequestID)
	if errors.Is(err, claims.ErrNoClaim) {
		return CustomResponse{MinionID: minion, RequestID: request, ExecutionID: e.RequestID,
			Status: receipt.StatusNotStarted, Reused: reason}, nil // queued: CustomStart drives it
	} else if err != nil {
		return CustomResponse{}, err
	}
	if err := checkBinding(c, receipt.ProfileCustom, minion); err != nil {
		return CustomResponse{}, err
	}
	return d.customRespond(ctx, cat, e, c, request, reason)
}

// customDecisionFor gathers the server's evidence and applies decideCustom. A failure that only lacks its
// minion receipt is confirmed by one oduflow_job.status read, then decided again.
func (d *Dispatcher) customDecisionFor(ctx context.Context, cat catalog.Store, minion, definitionID, digest string,
	mode customMode) (customDecision, error) {
	for attempt := 0; ; attempt++ {
		req, byID, err := d.customEvidence(ctx, cat, minion)
		if err != nil {
			return customDecision{}, err
		}
		req.Mode, req.DefinitionID, req.Digest = mode, definitionID, digest
		dec, err := decideCustom(req)
		var nc *NeedsConfirmationError
		if attempt > 0 || !errors.As(err, &nc) || !nc.Dispatched {
			return dec, err
		}
		c := byID[nc.RequestID]
		if c == nil || c.Legacy() {
			return dec, err
		}
		// The minion's own receipt (oduflow_job.status), bound to the claim, confirms or corrects the
		// asserted outcome: Reconcile records it in the master's claim (evidence reconciled, the assertion
		// kept for audit), and the next round mirrors it into the catalog.
		if _, rerr := d.Reconcile(ctx, c.MinionID, c.RequestID, FromMinion{}); rerr != nil {
			d.log.Info("custom: failure not confirmed by the minion", slog.String("request_id", c.RequestID),
				slog.String("error", rerr.Error()))
			return dec, err
		}
	}
}

// customEvidence builds the rules' input for one server: every custom execution with its current status
// and confirmation (custom claims without a snapshot count as unknown definitions, so an unknown one still
// blocks), and the configure claims.
func (d *Dispatcher) customEvidence(ctx context.Context, cat catalog.Store, minion string) (customRequest, map[string]*claims.Claim, error) {
	execs, err := cat.Executions(ctx, minion)
	if err != nil {
		return customRequest{}, nil, err
	}
	all, err := d.store.ListByClient(ctx, minion)
	if err != nil {
		return customRequest{}, nil, err
	}
	byID := make(map[string]*claims.Claim, len(all))
	for _, c := range all {
		byID[c.RequestID] = c
	}
	req := customRequest{Configure: configRecords(all)}
	seen := make(map[string]bool, len(execs))
	for _, e := range execs {
		seen[e.RequestID] = true
		rec := customRecord{RequestID: e.RequestID, DefinitionID: e.DefinitionID, Digest: e.Digest,
			Status: receipt.StatusNotStarted, CreatedAt: e.CreatedAt}
		if c := byID[e.RequestID]; c != nil {
			c, st, err := d.computeStatus(ctx, c)
			if err != nil {
				return customRequest{}, nil, err
			}
			o := outcomeOf(c, st)
			if e.Outcome.ConfirmedBy == catalog.ConfirmedByMinionReceipt && o.ConfirmedBy == catalog.ConfirmedByOperatorAssertion {
				o = e.Outcome
			} else {
				d.mirror(ctx, cat, e, o)
			}
			rec.Status, rec.Confirmation, rec.Dispatched = o.Status, o.ConfirmedBy, c.WasDispatched()
		}
		req.History = append(req.History, rec)
	}
	for _, c := range all {
		if c.EffectiveProfile() != receipt.ProfileCustom || seen[c.RequestID] {
			continue
		}
		c, st, err := d.computeStatus(ctx, c)
		if err != nil {
			return customRequest{}, nil, err
		}
		o := outcomeOf(c, st)
		req.History = append(req.History, customRecord{RequestID: c.RequestID, Digest: c.StateDigest,
			Status: o.Status, Confirmation: o.ConfirmedBy, Dispatched: c.WasDispatched(), CreatedAt: c.CreatedAt})
	}
	return req, byID, nil
}
