package claims

import (
	"bytes"
	"encoding/json"
	"time"

	"github.com/cockroachdb/errors"

	"github.com/oduflow/oduflow-go/internal/errmark"
	"github.com/oduflow/oduflow-go/internal/strictjson"
	"github.com/oduflow/oduflow-go/receipt"
)

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

// Decode is UnmarshalBinary into a new claim, which it returns: a store's read path, one allocation for
// the claim and its decoding frame together (UnmarshalBinary copies the decoded claim into its receiver).
func Decode(data []byte) (_ *Claim, err error) {
	defer errmark.Boundary(&err)
	return decodeClaim(data)
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
	if lc.Protocol >= Protocol && !known {
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
	if c.Protocol < Protocol {
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
