package claims

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/oduflow/oduflow-go/internal/strictjson"
	"github.com/oduflow/oduflow-go/receipt"
)

func TestDecodeClaimIsStrict(t *testing.T) {
	c := newClaim(receipt.ProfileConfigure)
	c.Phase, c.Status, c.Passed, c.Total, c.Evidence = PhaseTerminal, receipt.StatusSucceeded, 3, 3, "receipt"
	good, err := encodeClaim(c)
	if err != nil {
		t.Fatal(err)
	}
	good = bytes.TrimSpace(good)
	body := good[:len(good)-1] // without the closing brace
	legacy := readFixture(t, "unprofiled_succeeded.json")
	cases := []struct {
		name string
		data []byte
		kind error // a strictjson sentinel, or nil for a schema refusal
	}{
		{"appended status and phase", append(append([]byte{}, body...), `,"status":"failed","phase":"claimed"}`...), strictjson.ErrDuplicateKey},
		{"duplicate by case", append(append([]byte{}, body...), `,"Status":"failed"}`...), strictjson.ErrDuplicateKey},
		{"duplicate by escape", append(append([]byte{}, body...), `,"st\u0061tus":"failed"}`...), strictjson.ErrDuplicateKey},
		{"second object", append(append([]byte{}, good...), `{"status":"failed"}`...), strictjson.ErrTrailingData},
		{"trailing garbage", append(append([]byte{}, good...), `]`...), strictjson.ErrTrailingData},
		{"unknown field in a protocol claim", append(append([]byte{}, body...), `,"raw_return":{"x":1}}`...), nil},
		{"legacy claim with a duplicate", bytes.Replace(legacy, []byte(`{`), []byte(`{"state":"claimed",`), 1), strictjson.ErrDuplicateKey},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := decodeClaim(tc.data)
			if !errors.Is(err, ErrCorruptClaim) || (tc.kind != nil && !errors.Is(err, tc.kind)) {
				t.Fatalf("decodeClaim(%s) = %v", tc.data, err)
			}
		})
	}
	// What must still decode: the claim itself with surrounding whitespace, and every legacy fixture (whose
	// earlier runners wrote keys such as "command" that protocol claims do not have).
	if got, err := decodeClaim(append(append([]byte("\n "), good...), "\n\n"...)); err != nil || got.Status != receipt.StatusSucceeded {
		t.Fatalf("good claim: %+v %v", got, err)
	}
	for _, f := range []string{"unprofiled_succeeded.json", "unprofiled_dispatched.json", "preprotocol_configure_failed.json"} {
		if _, err := decodeClaim(readFixture(t, f)); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
	}
}

// TestClaimFieldNames: isClaimField, which lets decodeClaim skip the closed-schema decode, knows exactly the
// JSON names of Claim's fields.
func TestClaimFieldNames(t *testing.T) {
	typ := reflect.TypeOf(Claim{})
	for i := range typ.NumField() {
		name, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
		if name == "" || name == "-" {
			t.Fatalf("field %s has no JSON name", typ.Field(i).Name)
		}
		if !isClaimField([]byte(name)) {
			t.Errorf("isClaimField(%q) = false", name)
		}
	}
	for _, k := range []string{"state", "created", "dispatched", "command", "error", "Status", "raw_return", ""} {
		if isClaimField([]byte(k)) {
			t.Errorf("isClaimField(%q) = true", k)
		}
	}
}

// A protocol claim whose keys are not, byte for byte, Claim's own still gets the closed-schema decode: a
// legacy-only key is refused; a field name in another spelling (which encoding/json matches to the field)
// is accepted exactly as before.
func TestDecodeProtocolClaimKeySpellings(t *testing.T) {
	c := newClaim(receipt.ProfileConfigure)
	good, err := encodeClaim(c)
	if err != nil {
		t.Fatal(err)
	}
	body := bytes.TrimSpace(good)
	body = body[:len(body)-1]
	for _, extra := range []string{`,"state":"claimed"}`, `,"command":"state.apply"}`, `,"error":"x"}`, `,"r\u0061w":1}`} {
		if _, err := decodeClaim(append(append([]byte{}, body...), extra...)); !errors.Is(err, ErrCorruptClaim) {
			t.Errorf("protocol claim with %s: %v", extra, err)
		}
	}
	respelled := bytes.Replace(good, []byte(`"role":`), []byte(`"ROLE":`), 1)
	respelled = bytes.Replace(respelled, []byte(`"jid":`), []byte(`"j\u0069d":`), 1)
	got, err := decodeClaim(respelled)
	if err != nil || got.Role != c.Role || got.JID != c.JID {
		t.Fatalf("respelled keys: %+v %v", got, err)
	}
}

func TestDecodeClaimAllocs(t *testing.T) {
	c := newClaim(receipt.ProfileConfigure)
	data, err := encodeClaim(c)
	if err != nil {
		t.Fatal(err)
	}
	a := testing.AllocsPerRun(50, func() {
		if _, err := decodeClaim(data); err != nil {
			t.Fatal(err)
		}
	})
	t.Logf("decodeClaim: %.0f allocations", a)
	if a > 25 {
		t.Fatalf("decodeClaim allocates %.0f times (a token walk or a second decode is back)", a)
	}
}
