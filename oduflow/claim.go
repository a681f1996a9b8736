package oduflow

import (
	"bytes"
	"encoding/json"
	"time"

	"github.com/oduflow/oduflow-go/internal/errmark"
	"github.com/oduflow/oduflow-go/internal/strictjson"

	"github.com/cockroachdb/errors"

	"github.com/oduflow/oduflow-go/receipt"
)

// claimProtocol is the claim format written by this package. Claims without a protocol field are legacy.
const claimProtocol = 1

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

// Claim is the durable master record of one request. It holds identities, the fixed role, the preassigned
// JID, the phase, timestamps and the sanitized outcome: nothing raw from Salt.
type Claim struct {
	Protocol    int             `json:"protocol,omitempty"`
	MinionID    string          `json:"minion_id"`
	RequestID   string          `json:"request_id"`
	Profile     receipt.Profile `json:"profile,omitempty"`
	Role        string          `json:"role,omitempty"`
	StateDigest string          `json:"state_digest,omitempty"`
	// PayloadRef names the frozen payload of a custom execution (resolved by a publicationSource).
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
	// CreatedClock and DispatchedClock are the host's monotonic clock (boot id and CLOCK_BOOTTIME) when a
	// FileClaimStore created the claim and recorded its dispatch intent: that store measures the launch
	// and dispatch windows of the status rules with them, never with a wall clock (statuswindows.go). Empty in
	// other stores and in claims written before them.
	CreatedClock    string `json:"created_clock,omitempty"`
	DispatchedClock string `json:"dispatched_clock,omitempty"`
	// Generation is the fencing token: every successful update increments it.
	Generation uint64 `json:"generation"`
}

// MaxFenceToken is the largest fencing token (2^53-1: exact in JSON and in a msgpack double, as the
// minion module requires).
const MaxFenceToken = 1<<53 - 1

// Legacy reports whether the claim was written by an earlier version of the master runner (no protocol
// field): such a claim can never get a minion receipt; one without profile fields is a configuration job.
func (c *Claim) Legacy() bool { return c.legacy() != notLegacy }

// legacy classifies the claim.
func (c *Claim) legacy() legacyClass {
	switch {
	case c.Protocol >= claimProtocol:
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

func (c *Claim) clone() *Claim {
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
		if _, err := receipt.ParseProfile(string(c.Profile)); err != nil {
			return errmark.Mark(err, ErrCorruptClaim)
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
	if c.Protocol >= claimProtocol && (c.Profile == "" || c.JID == "") {
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
			if _, err := parseHostStamp(st); err != nil {
				return err
			}
		}
	}
	return nil
}

// encodeClaim serialises a claim (stable field order, no HTML escaping).
func encodeClaim(c *Claim) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(c); err != nil {
		return nil, errors.Wrap(err, "oduflow: encode claim")
	}
	return buf.Bytes(), nil
}

// MarshalBinary encodes the claim as stored (JSON, stable field order, no HTML escaping): what a
// ClaimStore keeps.
func (c *Claim) MarshalBinary() (_ []byte, err error) {
	defer errmark.Boundary(&err)
	return encodeClaim(c)
}

// UnmarshalBinary parses and validates a stored claim into c, accepting the legacy spellings of earlier
// runners. It refuses (ErrCorruptClaim) duplicate keys at any depth (case-insensitively, as encoding/json
// matches fields), anything after the JSON value, unknown keys in a protocol claim, and invalid contents;
// c is unchanged when it fails.
func (c *Claim) UnmarshalBinary(data []byte) (err error) {
	defer errmark.Boundary(&err)
	out, err := decodeClaim(data)
	if err != nil {
		return err
	}
	*c = *out
	return nil
}

// legacyClaim accepts the field spellings of earlier runners.
type legacyClaim struct {
	Claim
	State      string   `json:"state"`      // pre-protocol runners: phase under another name
	Created    *float64 `json:"created"`    // unix seconds
	Dispatched *float64 `json:"dispatched"` // unix seconds
	Command    string   `json:"command"`    // informational ("state.apply")
	ErrorText  string   `json:"error"`      // never kept (may be raw); only its presence matters
}

// decodeClaim parses and validates a stored claim, accepting both legacy kinds. It refuses (ErrCorruptClaim)
// duplicate keys at any depth (case-insensitively, as encoding/json matches fields), anything after the
// JSON value, and unknown keys in a protocol claim.
func decodeClaim(data []byte) (*Claim, error) {
	// Strict first: a repeated key (also one differing only in case, which encoding/json merges into one
	// field) or a second value after the first must not rewrite a committed claim.
	// Check also reports the top-level keys: when each is, byte for byte, the name of a Claim field,
	// encoding/json's DisallowUnknownFields could not refuse the record, and the second, strict decode of
	// a protocol claim is skipped (any other spelling, escaped or case-changed, gets that decode).
	known := true
	keys := strictjson.TopLevelKeys(func(k []byte) {
		if !isClaimField(k) {
			known = false
		}
	})
	if err := strictjson.Check(data, strictjson.FoldCase(), keys); err != nil {
		return nil, errmark.Mark(errors.Wrap(err, "oduflow: decode claim"), ErrCorruptClaim)
	}
	var lc legacyClaim
	if err := json.Unmarshal(data, &lc); err != nil { // one value: Check refused anything after it
		return nil, errmark.Mark(errors.Wrap(err, "oduflow: decode claim"), ErrCorruptClaim)
	}
	if lc.Protocol >= claimProtocol && !known {
		// A protocol claim is written only by this package: its schema is closed. Legacy claims keep
		// whatever extra keys earlier runners wrote.
		strict := json.NewDecoder(bytes.NewReader(data))
		strict.DisallowUnknownFields()
		var pc Claim
		if err := strict.Decode(&pc); err != nil {
			return nil, errmark.Mark(errors.Wrap(err, "oduflow: decode claim: unknown field"), ErrCorruptClaim)
		}
	}
	c := &lc.Claim // the claim returned: one allocation with its decoding frame
	if c.Protocol < claimProtocol {
		c.Protocol = 0
		if !c.Status.Terminal() && c.Status != receipt.StatusUnknown {
			c.Status = "" // a legacy "running"/"not_started" snapshot is not a result
		}
		if c.Phase == "" {
			c.Phase = legacyPhase(lc.State, c.Status)
		}
		if c.CreatedAt.IsZero() && lc.Created != nil {
			c.CreatedAt = unixFloat(*lc.Created)
		}
		if c.DispatchedAt == nil && lc.Dispatched != nil {
			t := unixFloat(*lc.Dispatched)
			c.DispatchedAt = &t
		}
		if lc.ErrorText != "" && c.ErrorCode == "" {
			c.ErrorCode = CodeLegacyError
		}
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return c, nil
}

// isClaimField reports whether k is exactly the JSON name of a Claim field (TestClaimFieldNames keeps the
// list equal to the struct tags).
func isClaimField(k []byte) bool {
	switch string(k) {
	case "protocol", "minion_id", "request_id", "profile", "role", "state_digest", "payload_ref", "jid", "phase",
		"created_at", "dispatched_at", "finished_at", "resumed_at", "status", "passed", "total", "error_code",
		"evidence", "asserted_by", "asserted_reason", "minion_key_sha256", "fence_token", "created_clock",
		"dispatched_clock", "generation":
		return true
	}
	return false
}

func legacyPhase(state string, st receipt.Status) Phase {
	if st.Terminal() || st == receipt.StatusUnknown {
		return PhaseTerminal
	}
	switch state {
	case "", "claimed", "launching":
		return PhaseClaimed
	case "dispatching":
		return PhaseDispatching
	default: // "dispatched", "running", "published", anything later: the publish may have gone out
		return PhaseDispatched
	}
}

func unixFloat(f float64) time.Time {
	sec := int64(f)
	return time.Unix(sec, int64((f-float64(sec))*1e9)).UTC()
}

// isHex64 reports whether s is 64 lowercase hex digits.
func isHex64(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}
