package receipt

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/cockroachdb/errors"
	"github.com/vmihailenco/msgpack/v5"
)

const (
	testMinion  = "client-5b2f8c1e-3c4d-4e5f-8a9b-0c1d2e3f4a5b"
	testRequest = "0f8fad5b-d9cb-469f-a165-70867728950e"
	testJID     = "20261129154606051411"
	testDigest  = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
)

func goodReceipt() Receipt {
	return Receipt{Protocol: 1, MinionID: testMinion, RequestID: testRequest, JID: testJID,
		Profile: ProfileConfigure, Status: StatusSucceeded, Passed: 60, Total: 60}
}

func wantReason(t *testing.T, err error, reason string) {
	t.Helper()
	var ie *InvalidReceiptError
	if !errors.As(err, &ie) || !errors.Is(err, ErrInvalidReceipt) {
		t.Fatalf("err = %v, want *InvalidReceiptError(%s)", err, reason)
	}
	if ie.Reason != reason {
		t.Fatalf("reason = %q (%v), want %q", ie.Reason, err, reason)
	}
}

func TestFromValueGoTypes(t *testing.T) {
	t.Parallel()
	base := func() map[string]any { return goodReceipt().Map() }
	ok := []struct {
		name string
		set  any
	}{
		{"int8", int8(60)}, {"uint8", uint8(60)}, {"int16", int16(60)}, {"uint16", uint16(60)},
		{"int32", int32(60)}, {"uint32", uint32(60)}, {"int64", int64(60)}, {"uint64", uint64(60)},
		{"uint", uint(60)}, {"json.Number", json.Number("60")},
	}
	for _, c := range ok {
		m := base()
		m["passed"], m["total"] = c.set, c.set
		if r, err := FromValue(m); err != nil || r != goodReceipt() {
			t.Errorf("%s: %+v, %v", c.name, r, err)
		}
	}
	bad := []struct {
		name   string
		key    string
		set    any
		reason string
	}{
		{"float for int", "passed", 60.0, reasonWrongType},
		{"float32 for int", "total", float32(60), reasonWrongType},
		{"bool for int", "protocol", true, reasonWrongType},
		{"fractional json.Number", "total", json.Number("60.0"), reasonWrongType},
		{"exponent json.Number", "total", json.Number("6e1"), reasonWrongType},
		{"string for int", "passed", "60", reasonWrongType},
		{"bytes for string", "jid", []byte(testJID), reasonWrongType},
		{"nil string", "status", nil, reasonWrongType},
		{"named string type is not string", "profile", ProfileConfigure, reasonWrongType},
		{"uint64 overflow", "total", uint64(math.MaxUint64), reasonCounts},
		{"json int overflow", "total", json.Number("99999999999999999999999"), reasonCounts},
		{"json negative overflow", "passed", json.Number("-99999999999999999999999"), reasonCounts},
		{"protocol big", "protocol", uint64(math.MaxUint64), reasonBadProtocol},
		{"protocol 2", "protocol", int8(2), reasonBadProtocol},
	}
	for _, c := range bad {
		t.Run(c.name, func(t *testing.T) {
			m := base()
			m[c.key] = c.set
			_, err := FromValue(m)
			wantReason(t, err, c.reason)
		})
	}
	// map[any]any (msgpack) works; a non-string key is unknown_key.
	am := map[any]any{}
	for k, v := range base() {
		am[k] = v
	}
	if r, err := FromValue(am); err != nil || r != goodReceipt() {
		t.Fatalf("map[any]any: %+v, %v", r, err)
	}
	am[int64(1)] = "x"
	_, err := FromValue(am)
	wantReason(t, err, reasonUnknownKey)
	for _, v := range []any{nil, "x", []any{}, 1, map[string]string{}} {
		_, err := FromValue(v)
		wantReason(t, err, reasonWrongType)
	}
}

func TestFromValueMsgpackRoundTrip(t *testing.T) {
	t.Parallel()
	packed, err := msgpack.Marshal(goodReceipt().Map())
	if err != nil {
		t.Fatal(err)
	}
	for _, untyped := range []bool{false, true} {
		dec := msgpack.GetDecoder()
		dec.Reset(bytes.NewReader(packed))
		if untyped {
			dec.SetMapDecoder(func(d *msgpack.Decoder) (any, error) { return d.DecodeUntypedMap() })
		}
		var v any
		if err := dec.Decode(&v); err != nil {
			t.Fatal(err)
		}
		msgpack.PutDecoder(dec)
		r, err := FromValue(v)
		if err != nil || r != goodReceipt() {
			t.Fatalf("untyped=%v: %+v, %v (%T)", untyped, r, err, v)
		}
	}
}

func TestValidateAndEncode(t *testing.T) {
	t.Parallel()
	r := goodReceipt()
	enc, err := r.Encode()
	if err != nil {
		t.Fatal(err)
	}
	want := `{"jid":"20261129154606051411","minion_id":"client-5b2f8c1e-3c4d-4e5f-8a9b-0c1d2e3f4a5b","passed":60,"profile":"configure","protocol":1,"request_id":"0f8fad5b-d9cb-469f-a165-70867728950e","state_digest":"","status":"succeeded","total":60}`
	if string(enc) != want {
		t.Fatalf("Encode = %s", enc)
	}
	back, err := Decode(enc)
	if err != nil || back != r {
		t.Fatalf("round trip: %+v, %v", back, err)
	}
	mut := []struct {
		name   string
		f      func(*Receipt)
		reason string
	}{
		{"protocol", func(r *Receipt) { r.Protocol = 0 }, reasonBadProtocol},
		{"minion", func(r *Receipt) { r.MinionID = "minion/.." }, reasonBadMinionID},
		{"request", func(r *Receipt) { r.RequestID = "" }, reasonBadRequestID},
		{"jid", func(r *Receipt) { r.JID = "1" }, reasonBadJID},
		{"profile", func(r *Receipt) { r.Profile = "X" }, reasonBadProfile},
		{"status", func(r *Receipt) { r.Status = "x" }, reasonBadStatus},
		{"digest fixed", func(r *Receipt) { r.StateDigest = testDigest }, reasonBadDigest},
		{"digest custom", func(r *Receipt) { r.Profile = ProfileCustom }, reasonBadDigest},
		{"counts", func(r *Receipt) { r.Passed = 61 }, reasonCounts},
		{"counts max", func(r *Receipt) { r.Passed, r.Total = maxCount+1, maxCount+1 }, reasonCounts},
	}
	for _, m := range mut {
		t.Run(m.name, func(t *testing.T) {
			r := goodReceipt()
			m.f(&r)
			wantReason(t, r.Validate(), m.reason)
			_, err := r.Encode()
			wantReason(t, err, m.reason)
		})
	}
	if got := len(receiptKeys); got != 9 {
		t.Fatalf("receiptKeys has %d keys", got)
	}
}

func TestDecodeExtras(t *testing.T) {
	t.Parallel()
	enc, _ := goodReceipt().Encode()
	// invalid UTF-8 inside a string is bad_json, not silently replaced.
	bad := []byte(string(enc[:len(enc)-1]) + `,"x":"` + "\xff" + `"}`)
	_, err := Decode(bad)
	wantReason(t, err, reasonBadJSON)
	// a BOM is not JSON.
	_, err = Decode(append([]byte("\xef\xbb\xbf"), enc...))
	wantReason(t, err, reasonBadJSON)
	// the error never echoes untrusted key names.
	_, err = Decode([]byte(`{"secret-looking-key":1}`))
	wantReason(t, err, reasonUnknownKey)
	if msg := err.Error(); strings.Contains(msg, "secret") {
		t.Fatalf("error leaks key: %s", msg)
	}
}
