package oduflow

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/oduflow/oduflow-go/internal/strictjson"
	"github.com/oduflow/oduflow-go/receipt"
)

func TestDecodeClaimIsStrict(t *testing.T) {
	clk := newFakeClock()
	c := newClaim(clk, receipt.ProfileConfigure)
	c.Phase, c.Status, c.Passed, c.Total, c.Evidence = PhaseTerminal, receipt.StatusSucceeded, 3, 3, evidenceReceipt
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

// Through the real store: a claim file turned from succeeded into running by appended keys is corrupt, not
// a running request.
func TestStoredClaimWithAppendedKeysIsCorrupt(t *testing.T) {
	ctx := context.Background()
	clk := newFakeClock()
	d := newOffline(t, clk)
	fs := mustFileStore(t, d)
	c := newClaim(clk, receipt.ProfileConfigure)
	putClaim(t, d, c)
	data, err := fs.files().Read(claimName(c.RequestID))
	if err != nil {
		t.Fatal(err)
	}
	data = bytes.TrimSpace(data)
	spoiled := append(append([]byte{}, data[:len(data)-1]...), `,"phase":"dispatched","phase":"claimed"}`...)
	if err := fs.files().WriteAtomic(claimName(c.RequestID), spoiled); err != nil {
		t.Fatal(err)
	}
	if _, err := fs.Get(ctx, c.RequestID); !errors.Is(err, ErrCorruptClaim) || !errors.Is(err, strictjson.ErrDuplicateKey) {
		t.Fatalf("Get: %v", err)
	}
	if _, err := d.Status(ctx, c.MinionID, c.RequestID, receipt.ProfileConfigure); !errors.Is(err, ErrCorruptClaim) {
		t.Fatalf("Status: %v", err)
	}
}
