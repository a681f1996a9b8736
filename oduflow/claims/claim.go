package claims

import (
	"time"

	"github.com/cockroachdb/errors"

	"github.com/oduflow/oduflow-go/internal/errmark"
	"github.com/oduflow/oduflow-go/internal/hostclock"
	"github.com/oduflow/oduflow-go/receipt"
)

// Protocol is the claim format this package encodes and the dispatcher writes (Claim.Protocol). A claim
// with a lower one (no protocol field) was written by an earlier runner: it is legacy (Claim.Legacy).
const Protocol = 1

// Phase is the master-side phase of a claim.
type Phase string

// Claim phases. claimed -> dispatching -> dispatched -> terminal; asserted is terminal and reachable only
// from unknown through an operator's Reconcile.
const (
	PhaseClaimed     Phase = "claimed"
	PhaseDispatching Phase = "dispatching"
	PhaseDispatched  Phase = "dispatched"
	PhaseTerminal    Phase = "terminal"
	PhaseAsserted    Phase = "asserted"
)

func (p Phase) valid() bool {
	switch p {
	case PhaseClaimed, PhaseDispatching, PhaseDispatched, PhaseTerminal, PhaseAsserted:
		return true
	}
	return false
}

// Final reports whether the phase carries a recorded status (terminal or asserted).
func (p Phase) Final() bool { return p == PhaseTerminal || p == PhaseAsserted }

// legacyClass distinguishes claims written by earlier versions of the master runner.
type legacyClass int

const (
	// notLegacy: a protocol-1 claim.
	notLegacy legacyClass = iota
	// legacyUnprofiled: written before profile fields existed; configuration jobs only.
	legacyUnprofiled
	// legacyPreProtocol: profile fields but no protocol field: published as a plain state.apply, so no
	// minion receipt will ever exist.
	legacyPreProtocol
)

// Claim is the durable master record of one request. It holds identities, the fixed role, the preassigned
// JID, the phase, timestamps and the sanitized outcome: nothing raw from Salt.
type Claim struct {
	Protocol    int             `json:"protocol,omitempty"`
	MinionID    string          `json:"minion_id"`
	RequestID   string          `json:"request_id"`
	Profile     receipt.Profile `json:"profile,omitempty"`
	Role        string          `json:"role,omitempty"`
	StateDigest string          `json:"state_digest,omitempty"`
	// PayloadRef names the frozen payload of a custom execution (the dispatcher resolves it).
	PayloadRef   string     `json:"payload_ref,omitempty"`
	JID          string     `json:"jid"`
	Phase        Phase      `json:"phase"`
	CreatedAt    time.Time  `json:"created_at"`
	DispatchedAt *time.Time `json:"dispatched_at,omitempty"`
	FinishedAt   *time.Time `json:"finished_at,omitempty"`
	// ResumedAt is when Resume last asked for another polling window (see Dispatcher.Resume).
	ResumedAt   *time.Time     `json:"resumed_at,omitempty"`
	Status      receipt.Status `json:"status,omitempty"`
	Passed      int            `json:"passed"`
	Total       int            `json:"total"`
	ErrorCode   ErrorCode      `json:"error_code,omitempty"`
	Evidence    string         `json:"evidence,omitempty"`
	AssertedBy  string         `json:"asserted_by,omitempty"`
	AssertedWhy string         `json:"asserted_reason,omitempty"`
	// MinionKeySHA256 pins, at preflight, the fingerprint (hex SHA-256 of the DER SubjectPublicKeyInfo)
	// of the key the master accepted for MinionID: only proofs signed by that key are evidence. Claims
	// written before receipt proofs have none.
	MinionKeySHA256 string `json:"minion_key_sha256,omitempty"`
	// FenceToken is the fencing token the claim store issued with the dispatch intent
	// (ClaimStore.CompareAndSwapHeld from phase claimed to dispatching): strictly greater than every token
	// issued before for the same client, published with oduflow_job.run and enforced by the minion,
	// which never starts a run whose token is not above the highest it has started or fenced. 0: never
	// dispatched, or dispatched before fencing existed. Once issued it never changes.
	FenceToken uint64 `json:"fence_token,omitempty"`
	// CreatedClock and DispatchedClock are the host's monotonic clock (boot id and CLOCK_BOOTTIME,
	// "<boot id>/<nanoseconds>") when the file store (oduflow/filestore) created the claim and recorded its
	// dispatch intent: that store measures the launch and dispatch windows of the status rules with them,
	// never with a wall clock (WindowedStore). Empty in other stores and in claims written before them.
	CreatedClock    string `json:"created_clock,omitempty"`
	DispatchedClock string `json:"dispatched_clock,omitempty"`
	// Generation is the fencing token: every successful update increments it.
	Generation uint64 `json:"generation"`
}

// ErrorCode is the sanitized reason a claim records for its result (Claim.ErrorCode; "error_code" in
// JSON, a plain string there). It is "" when there is none (a succeeded request, a running one,
// not_started) or one of package oduflow's Code* constants (its README's "Error codes" table); this
// package names only the one its decoder records, CodeLegacyError. The code says why; the status says
// whether the run may have happened. Claims are not validated against the list: one written by another
// version may carry a code this one does not name, so read an unknown code as text, never as an error.
type ErrorCode string

// CodeLegacyError: a legacy (pre-protocol) claim recorded an error text; its status is the legacy
// record's. The text is not kept: the code only says there was one (UnmarshalBinary records it).
const CodeLegacyError ErrorCode = "legacy_error"

// MaxFenceToken is the largest fencing token (2^53-1: exact in JSON and in a msgpack double, as the
// minion module requires).
const MaxFenceToken = 1<<53 - 1

// Legacy reports whether the claim was written by an earlier version of the master runner (no protocol
// field): such a claim can never get a minion receipt; one without profile fields is a configuration job.
func (c *Claim) Legacy() bool { return c.legacy() != notLegacy }

// legacy classifies the claim.
func (c *Claim) legacy() legacyClass {
	switch {
	case c.Protocol >= Protocol:
		return notLegacy
	case c.Profile == "":
		return legacyUnprofiled
	default:
		return legacyPreProtocol
	}
}

// EffectiveProfile is the profile the claim is bound to (configure for legacy claims without profile).
func (c *Claim) EffectiveProfile() receipt.Profile {
	if c.Profile == "" {
		return receipt.ProfileConfigure
	}
	return c.Profile
}

// WasDispatched reports whether the dispatch intent was recorded (the publish may have gone out).
func (c *Claim) WasDispatched() bool {
	return c.DispatchedAt != nil || c.Phase == PhaseDispatching || c.Phase == PhaseDispatched
}

// Binding is the immutable binding a minion receipt must match.
func (c *Claim) Binding() receipt.Binding {
	return receipt.Binding{MinionID: c.MinionID, RequestID: c.RequestID, JID: c.JID,
		Profile: c.EffectiveProfile(), StateDigest: c.StateDigest}
}

// Quarantining reports whether the claim, as recorded, blocks new dispatches to its client: it was
// dispatched and has no final result other than unknown. A claim whose worker is still alive is covered
// by the client lease; callers decide liveness separately.
func (c *Claim) Quarantining() bool {
	if !c.WasDispatched() {
		return false
	}
	switch c.Phase {
	case PhaseAsserted:
		return false
	case PhaseTerminal:
		return c.Status == receipt.StatusUnknown
	}
	return true
}

// Clone is a copy of the claim that shares no memory with it (its time pointers copied too): what a store
// keeps or returns, and what the dispatcher changes before a CompareAndSwap.
func (c *Claim) Clone() *Claim {
	cp := *c
	if c.DispatchedAt != nil {
		t := *c.DispatchedAt
		cp.DispatchedAt = &t
	}
	if c.FinishedAt != nil {
		t := *c.FinishedAt
		cp.FinishedAt = &t
	}
	if c.ResumedAt != nil {
		t := *c.ResumedAt
		cp.ResumedAt = &t
	}
	return &cp
}

// Validate checks identities and the enumerations. It never echoes field contents other than identities.
func (c *Claim) Validate() (err error) {
	defer errmark.Boundary(&err)
	if err := receipt.ValidateMinionID(c.MinionID); err != nil {
		return errmark.Mark(err, ErrCorruptClaim)
	}
	if err := receipt.ValidateRequestID(c.RequestID); err != nil {
		return errmark.Mark(err, ErrCorruptClaim)
	}
	if c.JID != "" {
		if err := receipt.ValidateJID(c.JID); err != nil {
			return errmark.Mark(err, ErrCorruptClaim)
		}
	}
	if c.Profile != "" {
		if !c.Profile.ValidName() {
			return errmark.Mark(errors.WithStack(receipt.ErrUnknownProfile), ErrCorruptClaim)
		}
	}
	if !c.Phase.valid() {
		return errors.Wrapf(ErrCorruptClaim, "phase %q", errors.Safe(string(c.Phase)))
	}
	switch c.Status {
	case "", receipt.StatusSucceeded, receipt.StatusFailed, receipt.StatusUnknown:
	default:
		return errors.Wrapf(ErrCorruptClaim, "status %q", errors.Safe(string(c.Status)))
	}
	if c.Phase.Final() && c.Status == "" {
		return errors.Wrap(ErrCorruptClaim, "final claim without status")
	}
	if c.Protocol >= Protocol && (c.Profile == "" || c.JID == "") {
		return errors.Wrap(ErrCorruptClaim, "protocol claim without profile or jid")
	}
	if c.Passed < 0 || c.Total < 0 || c.Passed > c.Total {
		return errors.Wrap(ErrCorruptClaim, "counts")
	}
	if c.FenceToken > MaxFenceToken {
		return errors.Wrap(ErrCorruptClaim, "fence token beyond 2^53-1")
	}
	if c.FenceToken != 0 && c.Phase == PhaseClaimed {
		return errors.Wrap(ErrCorruptClaim, "fence token on a claim never dispatched")
	}
	if c.MinionKeySHA256 != "" && !isHex64(c.MinionKeySHA256) {
		return errors.Wrap(ErrCorruptClaim, "minion key fingerprint")
	}
	for _, st := range []string{c.CreatedClock, c.DispatchedClock} {
		if st != "" {
			if _, ok := hostclock.Parse(st); !ok {
				return errors.Wrap(ErrCorruptClaim, "host clock stamp")
			}
		}
	}
	return nil
}
