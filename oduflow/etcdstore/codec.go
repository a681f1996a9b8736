package etcdstore

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"time"

	"github.com/cockroachdb/errors"

	"github.com/oduflow/oduflow-go/internal/errmark"
	"github.com/oduflow/oduflow-go/oduflow/claims"
)

// Size caps on what is read back from the cluster. A claim encodes to about 600 bytes; anything far
// larger under the prefix was not written by this package.
const (
	MaxKeySize   = 512
	MaxClaimSize = 16 << 10
)

func corrupt(format string, args ...any) error {
	return errmark.Mark(errors.Newf("etcdstore: "+format, args...), claims.ErrCorruptClaim)
}

// claimFields lists the JSON names of claims.Claim's fields plus the legacy spellings.
func claimFields() map[string]bool {
	out := make(map[string]bool)
	t := reflect.TypeFor[claims.Claim]()
	for i := 0; i < t.NumField(); i++ {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if name != "" && name != "-" {
			out[name] = true
		}
	}
	// The field spellings of earlier runners that (*claims.Claim).UnmarshalBinary accepts (claims migrated from a claim
	// directory keep them).
	for _, f := range []string{"state", "created", "dispatched", "command", "error"} {
		out[f] = true
	}
	return out
}

// checkStrict accepts exactly one JSON object whose keys are known claim fields, each once, followed by
// nothing but white space. encoding/json alone would take unknown fields, the last of duplicated keys
// and trailing data silently.
func checkStrict(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	tok, err := dec.Token()
	if err != nil || tok != json.Delim('{') {
		return corrupt("claim is not a JSON object")
	}
	known := claimFields()
	seen := make(map[string]bool)
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return corrupt("claim JSON malformed")
		}
		key, _ := tok.(string)
		if !known[key] {
			return corrupt("claim has an unknown field")
		}
		if seen[key] {
			return corrupt("claim repeats field %q", errors.Safe(key))
		}
		seen[key] = true
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return corrupt("claim JSON malformed")
		}
	}
	if tok, err := dec.Token(); err != nil || tok != json.Delim('}') {
		return corrupt("claim JSON malformed")
	}
	if _, err := dec.Token(); err == nil || dec.More() {
		return corrupt("trailing data after the claim")
	}
	return nil
}

// decodeClaim decodes a stored claim strictly and checks that it is the record of requestID.
func decodeClaim(data []byte, requestID string) (*claims.Claim, error) {
	if len(data) > MaxClaimSize {
		return nil, corrupt("claim record of %d bytes exceeds the cap", errors.Safe(len(data)))
	}
	if err := checkStrict(data); err != nil {
		return nil, err
	}
	c := new(claims.Claim)
	if err := c.UnmarshalBinary(data); err != nil {
		return nil, errmark.Mark(err, claims.ErrCorruptClaim)
	}
	if c.RequestID != requestID {
		return nil, corrupt("claim record holds another request")
	}
	return c, nil
}

func cloneClaim(c *claims.Claim) *claims.Claim {
	cp := *c
	for _, p := range []**time.Time{&cp.DispatchedAt, &cp.FinishedAt, &cp.ResumedAt} {
		if *p != nil {
			t := **p
			*p = &t
		}
	}
	return &cp
}

func sameIdentity(a, b *claims.Claim) bool {
	return a.MinionID == b.MinionID && a.RequestID == b.RequestID && a.Profile == b.Profile &&
		a.Role == b.Role && a.StateDigest == b.StateDigest && a.JID == b.JID && a.PayloadRef == b.PayloadRef &&
		a.CreatedAt.Equal(b.CreatedAt) && a.Protocol == b.Protocol
}
