package receipt

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
	"unicode/utf8"

	"github.com/oduflow/oduflow-go/internal/errmark"
)

// maxCount is the largest passed/total a receipt may carry (2^53-1, the
// largest integer both Go and a JSON double hold exactly).
const maxCount = maxSafeInteger - 1

// codeKey is the one optional receipt key (see Receipt.Code).
const codeKey = "code"

// receiptKeys lists the nine receipt keys in schema order (also the order in which
// Decode checks them, so the first failing key decides the reason).
var receiptKeys = [...]string{
	"protocol", "minion_id", "request_id", "jid", "profile",
	"state_digest", "status", "passed", "total",
}

// Receipt is the protocol 1 minion receipt, also the shape of every answer of
// oduflow_job.status and of the return of oduflow_job.run.
//
// Which statuses a receipt may carry: the terminal succeeded and failed (a
// committed receipt), and, as answers of status(), running (a live worker
// holds the request lock), unknown (partial claim or dead worker) and
// not_started (no local evidence; never an authorization to republish).
//
// Consistency rules enforced by Validate (reason "counts"):
//   - 0 <= passed <= total <= maxCount;
//   - succeeded: total >= 1 and passed == total (a nonempty mapping, all true);
//   - failed: passed < total (at least one result not exactly true);
//   - running, unknown, not_started: passed == 0 and total == 0.
//
// state_digest (reason "bad_digest"): "" for the four fixed profiles; for
// custom, 64 lowercase hex digits when the status is running, succeeded or
// failed; for a custom not_started or unknown answer, or a fenced receipt,
// either "" (the minion has no evidence of the payload) or 64 lowercase hex.
//
// Code (the optional tenth key "code", reason "bad_code") says why a failed
// receipt ran nothing. The only code is CodeFenced: status failed with
// passed = total = 0 (the one failed receipt allowed 0 of 0), committed by the
// minion when the publication's fence token was not above its high-water mark
// or when oduflow_job.fence marked the publication never-to-run. A receipt
// without Code has exactly the nine keys of every earlier version, so receipts
// committed before fencing decode unchanged.
type Receipt struct {
	Protocol    int     `json:"protocol"`
	MinionID    string  `json:"minion_id"`
	RequestID   string  `json:"request_id"`
	JID         string  `json:"jid"`
	Profile     Profile `json:"profile"`
	StateDigest string  `json:"state_digest"`
	Status      Status  `json:"status"`
	Passed      int     `json:"passed"`
	Total       int     `json:"total"`
	Code        Code    `json:"code,omitempty"`
}

// Code is the reason a failed receipt ran nothing (the receipt's optional "code" key).
type Code string

// CodeFenced: the publication never ran and never will: its fence token was not above the
// minion's high-water mark, or oduflow_job.fence reached it first. Status failed, 0 of 0.
const CodeFenced Code = "fenced"

// Fenced reports whether r is a fenced receipt (nothing ran).
func (r Receipt) Fenced() bool { return r.Code == CodeFenced }

// Validate checks the values of r (types are already right in Go). Checks run
// in this order, the first failure decides the reason: bad_protocol,
// bad_minion_id, bad_request_id, bad_jid, bad_profile, bad_status, bad_code
// (a code other than fenced, or on a status other than failed), bad_digest,
// counts.
func (r Receipt) Validate() (err error) {
	defer errmark.Boundary(&err)
	switch {
	case r.Protocol != protocolVersion:
		return invalid(reasonBadProtocol, "protocol")
	case ValidateMinionID(r.MinionID) != nil:
		return invalid(reasonBadMinionID, "minion_id")
	case ValidateRequestID(r.RequestID) != nil:
		return invalid(reasonBadRequestID, "request_id")
	case ValidateJID(r.JID) != nil:
		return invalid(reasonBadJID, "jid")
	case !r.Profile.ValidName():
		return invalid(reasonBadProfile, "profile")
	case !r.Status.Valid():
		return invalid(reasonBadStatus, "status")
	case r.Code != "" && (r.Code != CodeFenced || r.Status != StatusFailed):
		return invalid(reasonBadCode, codeKey)
	}
	if r.Profile == ProfileCustom {
		evidenceFree := r.Status == StatusNotStarted || r.Status == StatusUnknown || r.Fenced()
		if !isDigestHex(r.StateDigest) && !(evidenceFree && r.StateDigest == "") {
			return invalid(reasonBadDigest, "state_digest")
		}
	} else if r.StateDigest != "" {
		return invalid(reasonBadDigest, "state_digest")
	}
	if r.Passed < 0 || r.Total < 0 || r.Passed > maxCount || r.Total > maxCount {
		return invalid(reasonCounts, "passed")
	}
	ok := r.Passed <= r.Total
	switch r.Status {
	case StatusSucceeded:
		ok = ok && r.Total >= 1 && r.Passed == r.Total
	case StatusFailed:
		if r.Fenced() {
			ok = r.Passed == 0 && r.Total == 0
			break
		}
		ok = ok && r.Passed < r.Total
	default:
		ok = r.Passed == 0 && r.Total == 0
	}
	if !ok {
		return invalid(reasonCounts, "total")
	}
	return nil
}

// Map returns r as a map with the nine keys, and "code" when r has one (the JSON shape).
func (r Receipt) Map() map[string]any {
	m := map[string]any{
		"protocol": r.Protocol, "minion_id": r.MinionID, "request_id": r.RequestID,
		"jid": r.JID, "profile": string(r.Profile), "state_digest": r.StateDigest,
		"status": string(r.Status), "passed": r.Passed, "total": r.Total,
	}
	if r.Code != "" {
		m[codeKey] = string(r.Code)
	}
	return m
}

// Encode validates r and returns its canonical JSON (RFC 8785) form.
func (r Receipt) Encode() (_ []byte, err error) {
	defer errmark.Boundary(&err)
	if err := r.Validate(); err != nil {
		return nil, err
	}
	return CanonicalJSON(r.Map())
}

// Decode parses a receipt strictly from JSON text. Any defect is an
// *InvalidReceiptError (errors.Is ErrInvalidReceipt) whose Reason is, in order
// of precedence: bad_json (not one JSON value, invalid UTF-8, NaN/Infinity
// literals, trailing data), wrong_type (not an object), duplicate_key,
// unknown_key, missing_key, wrong_type (per key, in schema order, then the
// optional code), then the value reasons of Validate.
func Decode(data []byte) (_ Receipt, err error) {
	defer errmark.Boundary(&err)
	if !utf8.Valid(data) || !json.Valid(data) {
		return Receipt{}, invalid(reasonBadJSON, "")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		return Receipt{}, invalid(reasonBadJSON, "")
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return Receipt{}, invalid(reasonWrongType, "")
	}
	m := make(map[string]any, len(receiptKeys))
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return Receipt{}, invalid(reasonBadJSON, "")
		}
		k, _ := tok.(string)
		var v any
		if err := dec.Decode(&v); err != nil {
			return Receipt{}, invalid(reasonBadJSON, "")
		}
		if _, dup := m[k]; dup {
			return Receipt{}, invalid(reasonDuplicateKey, safeKey(k))
		}
		m[k] = v
	}
	return FromValue(m)
}

// safeKey returns k when it is one of the nine keys or the optional code, else
// "" (an unknown key is untrusted text and is not put into errors).
func safeKey(k string) string {
	for _, rk := range receiptKeys {
		if k == rk {
			return k
		}
	}
	if k == codeKey {
		return k
	}
	return ""
}

// FromValue validates a receipt from an already decoded value: a
// map[string]any or map[any]any as produced by msgpack or by encoding/json
// with UseNumber (without UseNumber every JSON number is a float64, which is
// wrong_type for the integer keys). Integers may be any Go integer kind or an
// integer json.Number; a bool, a float (even 1.0) or a fractional number for
// an integer key is wrong_type. Reasons and their precedence are those of
// Decode.
func FromValue(v any) (_ Receipt, err error) {
	defer errmark.Boundary(&err)
	var m map[string]any
	switch x := v.(type) {
	case map[string]any:
		m = x
	case map[any]any:
		m = make(map[string]any, len(x))
		for k, val := range x {
			ks, ok := k.(string)
			if !ok {
				return Receipt{}, invalid(reasonUnknownKey, "")
			}
			m[ks] = val
		}
	default:
		return Receipt{}, invalid(reasonWrongType, "")
	}
	for k := range m {
		if safeKey(k) == "" {
			return Receipt{}, invalid(reasonUnknownKey, "")
		}
	}
	for _, k := range receiptKeys {
		if _, ok := m[k]; !ok {
			return Receipt{}, invalid(reasonMissingKey, k)
		}
	}
	strs := map[string]string{}
	ints := map[string]int64{}
	for _, k := range receiptKeys {
		if isIntKey(k) {
			n, ok := asInt(m[k])
			if !ok {
				return Receipt{}, invalid(reasonWrongType, k)
			}
			ints[k] = n
			continue
		}
		s, ok := m[k].(string)
		if !ok {
			return Receipt{}, invalid(reasonWrongType, k)
		}
		strs[k] = s
	}
	r := Receipt{
		MinionID: strs["minion_id"], RequestID: strs["request_id"], JID: strs["jid"],
		Profile: Profile(strs["profile"]), StateDigest: strs["state_digest"], Status: Status(strs["status"]),
	}
	if v, ok := m[codeKey]; ok {
		s, isStr := v.(string)
		if !isStr {
			return Receipt{}, invalid(reasonWrongType, codeKey)
		}
		if s == "" {
			return Receipt{}, invalid(reasonBadCode, codeKey) // present but empty is not "no code"
		}
		r.Code = Code(s)
	}
	if p := ints["protocol"]; p != protocolVersion {
		return Receipt{}, invalid(reasonBadProtocol, "protocol")
	}
	r.Protocol = protocolVersion
	r.Passed, r.Total = clampCount(ints["passed"]), clampCount(ints["total"])
	if err := r.Validate(); err != nil {
		return Receipt{}, err
	}
	return r, nil
}

func isIntKey(k string) bool { return k == "protocol" || k == "passed" || k == "total" }

// clampCount maps out-of-range values to -1 so Validate reports "counts"
// without overflowing int on any platform.
func clampCount(n int64) int {
	if n < 0 || n > maxCount {
		return -1
	}
	return int(n)
}

// asInt accepts integers only: Go integer kinds and integer json.Number
// literals. Out-of-int64-range values saturate (they fail the range checks).
func asInt(v any) (int64, bool) {
	switch x := v.(type) {
	case int:
		return int64(x), true
	case int8:
		return int64(x), true
	case int16:
		return int64(x), true
	case int32:
		return int64(x), true
	case int64:
		return x, true
	case uint:
		return satU(uint64(x)), true
	case uint8:
		return int64(x), true
	case uint16:
		return int64(x), true
	case uint32:
		return int64(x), true
	case uint64:
		return satU(x), true
	case json.Number:
		integer, ok := jsonNumberKind(string(x))
		if !ok || !integer {
			return 0, false
		}
		n, err := strconv.ParseInt(string(x), 10, 64)
		if err != nil {
			if len(x) > 0 && x[0] == '-' {
				return math.MinInt64, true
			}
			return math.MaxInt64, true
		}
		return n, true
	}
	return 0, false
}

func satU(u uint64) int64 {
	if u > math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(u)
}
